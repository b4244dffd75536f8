import { interleave, type Outcome, type Sample } from '../lib/interleave';
import { WorkerProcess } from '../lib/worker-process';
import { buildEntry, type ResultEntry } from '../report/results';
import { memorySubjects } from '../subjects/memory.subjects';
import type { Scenario, ScenarioContext } from './scenario';

/**
 * 5. Heap retained after N distinct keys were locked and released (bytes per key,
 * after `global.gc()`), and heap per key while many keys are held at once (net of
 * the harness's own promises, measured with a no-lock control). One child process
 * per round, started with `--expose-gc`; the contenders run in rotated order in it.
 */
export const memoryScenario: Scenario = {
  id: 5,
  title: 'Memory: heap retained after 1,000,000 keys locked and released',
  async run(context: ScenarioContext): Promise<ResultEntry[]> {
    const { config, log } = context;
    const { rounds, keys, heldKeys, batch } = config.memory;
    log(`  [5] ${keys} keys, ${heldKeys} held at once`);
    const ids = memorySubjects.map((s) => s.id);
    const workers: WorkerProcess[] = [];
    let controlHeld: number;
    try {
      for (let r = 0; r < rounds; r++)
        workers.push(WorkerProcess.start(`memory worker ${r + 1}`, 'bench/workers/memory.worker.ts', { execArgv: ['--expose-gc'] }));
      const controls: number[] = [];
      const outcomes: Map<string, Outcome> = await interleave(
        ids,
        rounds,
        async (id, round): Promise<Sample> => {
          const worker = workers[round];
          const request = { type: 'measure', keys, heldKeys, batch };
          if (!controls[round]) {
            const control = await worker.request({ ...request, subject: 'control', keys: batch }, 'measured', 120_000);
            controls[round] = (control.heldBytes as number) / heldKeys;
          }
          const reply = await worker.request({ ...request, subject: id }, 'measured', 120_000);
          return {
            metrics: {
              retainedBytesPerKey: reply.retainedBytesPerKey as number,
              heldBytesPerKey: (reply.heldBytes as number) / heldKeys - controls[round],
            },
          };
        },
        log,
      );
      controlHeld = controls.reduce((a, b) => a + b, 0) / controls.length;
      const common = {
        scenario: 5,
        group: 'memory-footprint' as const,
        contenders: memorySubjects,
        outcomes,
        unit: 'bytes/key',
        betterIs: 'lower' as const,
      };
      return [
        buildEntry({
          ...common,
          id: '5.memory.retained',
          name: `5. Heap retained after ${keys.toLocaleString('en-US')} distinct keys locked and released`,
          metric: 'retainedBytesPerKey',
          params: `${keys} distinct keys, ${batch} at a time, each acquired and released once; heap after global.gc() minus the baseline, ÷ keys; one --expose-gc child per round; median of ${rounds} rounds`,
          noiseFloor: 1,
          notes: [
            '≈ 0 means nothing is kept per released key; values within ±1 byte/key are heap noise (±1 MB over 1,000,000 keys), so no ratio is computed for them.',
          ],
        }),
        buildEntry({
          ...common,
          id: '5.memory.held',
          name: `5. Heap per key while ${heldKeys.toLocaleString('en-US')} keys are held at once`,
          metric: 'heldBytesPerKey',
          params: `${heldKeys} distinct keys held at the same time, heap after global.gc(), net of a no-lock control (${Math.round(controlHeld)} bytes/key: the harness's own promise, closure and key string); median of ${rounds} rounds`,
        }),
      ];
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  },
};

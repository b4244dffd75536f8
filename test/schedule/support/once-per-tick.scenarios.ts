/**
 * The multi-process scenarios of `@OncePerTick` (docs/scheduling.md), run against a real
 * backend by one suite per driver: three OS processes, each an instance of the same
 * app (test/schedule/workers/tick-app.worker.ts) with @nestjs/schedule jobs.
 */
import { overlappingPairs, runsPerTick, sleep, TickCluster } from './tick-cluster';

/** How long each scenario watches its instances tick. */
const WATCH_MS = 7000;
/** How long a run's finish may take to reach the backend after its body returned, on a busy host. */
const FINISH_MS = 300;

export function describeOncePerTick(driver: 'redis' | 'postgres'): void {
  describe(`three instances on ${driver}, clocks in step`, () => {
    let cluster: TickCluster;
    let stoppedAt: number;

    beforeAll(async () => {
      cluster = await TickCluster.start(driver, ['fast', 'naive', 'long', 'interval', 'shared'], [0, 0, 0]);
      await sleep(WATCH_MS);
      stoppedAt = Date.now();
      await cluster.stop();
    }, 60_000);

    // Ticks every instance fired while all were up: from the first full second after
    // all were ready to the last one whose runs had time to be reported.
    const window = () => ({ from: cluster.readyAt + 1000, to: stoppedAt - 1500 });

    it('runs every tick of an every-second cron with a 1 ms body exactly once, none missing', () => {
      const { from, to } = window();
      const perTick = runsPerTick(cluster.runs('fast'), 1000, from, to);
      expect(perTick.size).toBeGreaterThanOrEqual(4);
      expect([...perTick.entries()].filter(([, runs]) => runs !== 1)).toEqual([]);
      // Spread over the instances as they win the claims (not asserted: any one may win every tick).
    });

    it('never runs a 2.2 s body beside its previous run: the ticks that fire meanwhile are skipped', () => {
      const runs = cluster.runs('long').sort((a, b) => a.start - b.start);
      expect(runs.length).toBeGreaterThanOrEqual(2);
      expect(overlappingPairs(runs)).toEqual([]);
      // The first tick after a run ends is claimed: one run every third tick when runs start
      // on time. A run that started late (its instance starved of CPU) may end so close to
      // the next tick that its finish reaches the backend after that tick's claims: then the
      // tick after is the one, and only then.
      const notNext = runs.slice(1).flatMap((run, i) => {
        const tick = Math.floor(run.start / 1000);
        const previousEnd = runs[i].end;
        const first = Math.ceil(previousEnd / 1000);
        const last = Math.ceil((previousEnd + FINISH_MS) / 1000);
        return tick >= first && tick <= last ? [] : [{ previousEnd, start: run.start, tick, first, last }];
      });
      expect(notNext).toEqual([]);
    });

    it('runs each epoch-aligned 500 ms tick of @Interval(500) at most once', () => {
      const { from, to } = window();
      const perTick = runsPerTick(cluster.runs('interval'), 500, from, to);
      expect(perTick.size).toBeGreaterThanOrEqual(8);
      expect([...perTick.entries()].filter(([, runs]) => runs > 1)).toEqual([]);
      // Each instance's setInterval drifts a little per period, so one instance may step over
      // a slot now and then; with three instances at different phases a slot is covered anyway.
      expect([...perTick.values()].filter((runs) => runs === 0).length).toBeLessThanOrEqual(1);
    });

    it('runs each tick once among two methods that share a name', () => {
      const { from, to } = window();
      const runs = cluster.runs('shared');
      const perTick = runsPerTick(runs, 1000, from, to);
      expect([...perTick.entries()].filter(([, count]) => count !== 1)).toEqual([]);
      expect(overlappingPairs(runs)).toEqual([]);
    });
  });

  describe(`three instances on ${driver}, one clock 400 ms ahead`, () => {
    let cluster: TickCluster;
    let stoppedAt: number;

    beforeAll(async () => {
      cluster = await TickCluster.start(driver, ['fast', 'naive'], [0, 0, 400]);
      await sleep(WATCH_MS - 1000);
      stoppedAt = Date.now();
      await cluster.stop();
    }, 60_000);

    it('still runs every tick exactly once, none missing', () => {
      const perTick = runsPerTick(cluster.runs('fast'), 1000, cluster.readyAt + 1000, stoppedAt - 1500);
      expect(perTick.size).toBeGreaterThanOrEqual(3);
      expect([...perTick.entries()].filter(([, runs]) => runs !== 1)).toEqual([]);
    });

    it('negative control: a reject-mode lock around the same 1 ms job runs ticks twice', () => {
      // The instance 400 ms ahead has run and released long before the others wake, so
      // they find the lock free and run the tick again: duplicates on every tick.
      const perTick = runsPerTick(cluster.runs('naive'), 1000, cluster.readyAt + 1000, stoppedAt - 1500);
      const duplicated = [...perTick.values()].filter((runs) => runs > 1).length;
      expect(duplicated).toBeGreaterThan(0);
    });
  });

  describe(`three instances on ${driver}, one killed mid-run`, () => {
    it("runs the next tick after the lease on a survivor and never retries the dead instance's tick", async () => {
      const cluster = await TickCluster.start(driver, ['crash'], [0, 0, 0]);
      try {
        const started = () => cluster.instances.flatMap((instance) => instance.messages.filter((m) => m.type === 'started'));
        const deadline = Date.now() + 10_000;
        while (started().length === 0 && Date.now() < deadline) await sleep(20);
        expect(started().length).toBe(1);
        const first = started()[0];
        const victim = cluster.instances.find((instance) => instance.pid === first.pid)!;
        victim.kill('SIGKILL');
        const deadTick = Math.floor((first.start as number) / 1000) * 1000;

        const survivors = cluster.instances.filter((instance) => instance !== victim);
        const survivorStarts = () =>
          survivors.flatMap((instance) => instance.messages.filter((m) => m.type === 'started')).map((m) => m.start as number);
        while (survivorStarts().length === 0 && Date.now() < deadline + 6000) await sleep(20);
        await sleep(500);

        const starts = survivorStarts().sort((a, b) => a - b);
        expect(starts.length).toBeGreaterThanOrEqual(1);
        // The dead instance's tick is not run again.
        expect(starts.filter((start) => Math.floor(start / 1000) * 1000 <= deadTick)).toEqual([]);
        // Nothing starts while the dead run's lease (1500 ms from its claim) may still hold it...
        expect(starts[0] - deadTick).toBeGreaterThanOrEqual(1500);
        // ...and the first tick after the lease runs on a survivor. The victim stalled from its
        // claim, just before its `started`, so its lease ended by first.start + 1500: the tick
        // 2 s after the dead one when the victim started in the first half of its second.
        const survivorTick = Math.floor(starts[0] / 1000) * 1000;
        expect(survivorTick).toBeLessThanOrEqual(Math.ceil(((first.start as number) + 1500) / 1000) * 1000);
        if ((first.start as number) - deadTick < 500) expect(survivorTick - deadTick).toBe(2000);
      } finally {
        await cluster.stop();
      }
    }, 60_000);
  });
}

import { Redis } from 'ioredis';
import { WorkerProcess } from '../../support/processes';
import { TEST_REDIS_URL } from '../../support/services';
import { sleep, uniqueId } from '../../support/timing';
import { SENTINEL_MASTER_NAME, type SentinelGroup } from '../../setup/redis-sentinel';

const WORKER = 'test/redis/workers/failover-loop.worker.ts';

/** What one worker process counted (test/redis/workers/failover-loop.worker.ts). */
export interface FailoverCounts {
  sections: number;
  tokensTwice: number;
  overlaps: number;
  claimsRefused: number;
  writesAccepted: number;
  writesRefused: number;
  backendErrors: number;
  timeouts: number;
  lost: number;
  otherErrors: string[];
}

/** A run's totals over its processes, and what the ledger says. */
export interface FailoverRunResult extends FailoverCounts {
  /** Accepted fenced writes that the counters do not show: updates lost. */
  lostUpdates: number;
  /** Fail-overs made: from and to which port, and how long after the switch sections ran again. */
  failovers: { from: number; to: number; kind: FailoverKind; demotedAfterMs: number; servedAgainAfterMs: number | undefined }[];
}

/** How the master goes: `SENTINEL FAILOVER` (it keeps running), kill -9, or SIGSTOP until the Sentinels promote a replica. */
export type FailoverKind = 'sentinel' | 'kill' | 'sigstop';

export interface FailoverRunOptions {
  readonly processes: number;
  readonly loops: number;
  readonly keys: number;
  /** Replica acknowledgements (0: the option is off). */
  readonly acks: number;
  /** The fail-overs, in order, each after `gapMs` of load (one gap for all, or one per fail-over). */
  readonly kinds: readonly FailoverKind[];
  readonly gapMs: number | readonly number[];
  /** Lease of the workers' locks (default 2000 ms). */
  readonly leaseMs?: number;
  /** Load after the last fail-over (its recovery included). */
  readonly tailMs: number;
}

/**
 * Several processes run fenced sections through the group's Sentinels while the
 * master fails over; their counts and the ledger's say whether a key or a
 * fencing token was granted twice.
 */
export async function failoverRun(
  group: SentinelGroup,
  options: FailoverRunOptions,
  log: (line: string) => void = () => undefined,
): Promise<FailoverRunResult> {
  const ledgerPrefix = uniqueId('fo-ledger');
  const env = {
    SENTINELS: JSON.stringify(group.sentinels),
    MASTER_NAME: SENTINEL_MASTER_NAME,
    KEY_PREFIX: uniqueId('fo'),
    KEYS: String(options.keys),
    LOOPS: String(options.loops),
    LEASE_MS: String(options.leaseMs ?? 2000),
    REPLICA_ACKS: String(options.acks),
    REPLICA_TIMEOUT_MS: '300',
    LEDGER_URL: TEST_REDIS_URL,
    LEDGER_PREFIX: ledgerPrefix,
  };
  const workers = Array.from({ length: options.processes }, (_, i) => WorkerProcess.start(`failover-${i}`, WORKER, env));
  const ledger = new Redis(TEST_REDIS_URL);
  const failovers: FailoverRunResult['failovers'] = [];
  try {
    await Promise.all(workers.map((w) => w.waitForType('ready', 60_000)));
    for (const w of workers) w.send({ type: 'start' });
    const accepted = async () => {
      let total = 0;
      for (let k = 0; k < options.keys; k++) total += Number((await ledger.get(`${ledgerPrefix}:k${k}:counter`)) ?? 0);
      return total;
    };
    for (const [i, kind] of options.kinds.entries()) {
      await sleep(typeof options.gapMs === 'number' ? options.gapMs : options.gapMs[i]);
      const from = await group.masterPort();
      let to: number;
      if (kind === 'sentinel') ({ to } = await group.failover());
      else {
        if (kind === 'kill') group.kill(from);
        else group.pause(from, true);
        to = await group.promoted(from);
        if (kind === 'kill') await group.restart(from);
        else group.pause(from, false);
      }
      const switchedAt = Date.now();
      log(`fail-over (${kind}) ${from} → ${to}`);
      // The old master accepts writes until the Sentinels demote it (a SIGSTOPped one once it runs again).
      const demoted = await group.demoted(from);
      const demotedAt = Date.now();
      log(`${from} ${demoted ? `demoted after ${Date.now() - switchedAt} ms` : 'not demoted within 60 s'}`);
      // Served again: the counters move on, now through the new master.
      const before = await accepted();
      let servedAgainAfterMs: number | undefined;
      while (Date.now() - switchedAt < 60_000) {
        if ((await accepted()) > before + options.keys) {
          servedAgainAfterMs = Date.now() - switchedAt;
          break;
        }
        await sleep(100);
      }
      failovers.push({ from, to, kind, demotedAfterMs: demotedAt - switchedAt, servedAgainAfterMs });
    }
    await sleep(options.tailMs);
    for (const w of workers) w.send({ type: 'stop' });
    const done = await Promise.all(workers.map((w) => w.waitForType('done', 60_000)));
    const totals: FailoverCounts = {
      sections: 0,
      tokensTwice: 0,
      overlaps: 0,
      claimsRefused: 0,
      writesAccepted: 0,
      writesRefused: 0,
      backendErrors: 0,
      timeouts: 0,
      lost: 0,
      otherErrors: [],
    };
    for (const message of done) {
      const counts = message.counts as FailoverCounts;
      for (const name of Object.keys(totals) as (keyof FailoverCounts)[]) {
        if (name === 'otherErrors') totals.otherErrors.push(...counts.otherErrors);
        else totals[name] += counts[name];
      }
    }
    return { ...totals, lostUpdates: totals.writesAccepted - (await accepted()), failovers };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    const stale = await ledger.keys(`${ledgerPrefix}:*`);
    if (stale.length) await ledger.del(...stale);
    await ledger.quit();
  }
}

import { performance } from 'node:perf_hooks';
import { LockBackendError, LockTimeoutError } from '../../errors';
import { LockAttempt, MAX_LOCK_TIMEOUT_MS, type AttemptSessions } from './lock.attempt';
import { HELD_ELSEWHERE } from '../sessions/lock-session.request';
import type { LockSession } from './lock.session';
import type { LockSessionPool } from '../sessions/lock-session.pool';
import { lockStatements } from './postgres-lock.statements';
import { SessionTokens } from '../sessions/session.tokens';

/** A session that answers each statement with the next scripted outcome. */
class ScriptedConnection {
  readonly pid = 42;
  readonly tokens = new SessionTokens();
  dead: Error | undefined;
  exclusive = false;
  readonly sent: { lockTimeout: unknown; serverWaitMs: number }[] = [];
  constructor(private readonly outcomes: (unknown[] | { code: string })[]) {}
  async query(config: { values?: unknown[] }, serverWaitMs = 0): Promise<unknown[]> {
    this.sent.push({ lockTimeout: config.values?.[1], serverWaitMs });
    const outcome = this.outcomes.shift();
    if (!outcome) throw new Error('no scripted answer left');
    if (!Array.isArray(outcome)) throw Object.assign(new Error('scripted error'), outcome);
    return outcome;
  }
  kill(reason: Error): void {
    this.dead = reason;
  }
  tryLock(statements: { tryLock(key: string): { values?: unknown[] } }, key: string, _name?: string): Promise<unknown[]> {
    return this.query(statements.tryLock(key));
  }
  lockWait(
    statements: { lock(key: string, timeout: string): { values?: unknown[] } },
    lockKey: string,
    _key: string,
    serverWaitMs: number,
  ): Promise<unknown[]> {
    return this.query(statements.lock(lockKey, `${serverWaitMs}ms`), serverWaitMs);
  }
  cancel(): Promise<void> {
    return Promise.resolve();
  }
}

function sessionsOf(session: ScriptedConnection, released: unknown[] = []): AttemptSessions {
  return {
    pool: {
      // A try shares a session; a blocking wait gets one of its own.
      take: (request: { shared: boolean }) => {
        session.exclusive = !request.shared;
        return { promise: Promise.resolve(session as unknown as LockSession), cancel: () => undefined };
      },
      share: (c: ScriptedConnection) => void (c.exclusive = false),
      size: 10,
      release: (c: unknown) => void released.push(c),
      discard: (c: ScriptedConnection, reason: Error) => c.kill(reason),
    } as unknown as LockSessionPool<LockSession>,
    statements: lockStatements('nsz_spec_seq'),
    connectTimeoutMs: 1000,
    backendError: (key, cause) => new LockBackendError(`backend: ${(cause as Error).message}`, { key, cause }),
    refuse: () => undefined,
  };
}

function attempt(session: ScriptedConnection, mode: 'wait' | 'try', waitTimeoutMs: number) {
  const released: unknown[] = [];
  const sessions = sessionsOf(session, released);
  const made = new LockAttempt(sessions, 'k', '1', { mode, waitTimeoutMs, startedAt: performance.now(), signal: undefined });
  // Another session holds the key: the caller waits (its backend would count it as a waiter first).
  const promise = made
    .start()
    .then((answer) => (answer === HELD_ELSEWHERE ? made.waitBehind() : answer))
    .then((grant) => grant && { key: 'k', fencingToken: grant.fencingToken });
  return { promise, released };
}

describe('LockAttempt', () => {
  it('clamps lock_timeout to 2^31−1 ms for a longer budget, and waits again when the server bound runs out first', async () => {
    // A wait starts with a try; the key is busy, so it waits in the server.
    const session = new ScriptedConnection([[null, 42], { code: '55P03' }, ['7', 42]]);
    const { promise } = attempt(session, 'wait', Number.MAX_SAFE_INTEGER);
    await expect(promise).resolves.toEqual({ key: 'k', fencingToken: 7n });
    expect(session.sent).toEqual([
      { lockTimeout: null, serverWaitMs: 0 },
      { lockTimeout: `${MAX_LOCK_TIMEOUT_MS}ms`, serverWaitMs: MAX_LOCK_TIMEOUT_MS },
      { lockTimeout: `${MAX_LOCK_TIMEOUT_MS}ms`, serverWaitMs: MAX_LOCK_TIMEOUT_MS },
    ]);
  });

  it('ends with LockTimeoutError when lock_timeout was the whole budget', async () => {
    const session = new ScriptedConnection([[null, 42], { code: '55P03' }]);
    const { promise, released } = attempt(session, 'wait', 5000);
    await expect(promise).rejects.toBeInstanceOf(LockTimeoutError);
    expect(session.sent).toHaveLength(2);
    expect(Number(String(session.sent[1].lockTimeout).replace('ms', ''))).toBeLessThanOrEqual(5000);
    // The shared use of the try, then the session the wait had to itself.
    expect(released).toEqual([session, session]);
    expect(((await promise.catch((e: unknown) => e)) as LockTimeoutError).reason).toBe('key-held');
  });

  it("resolves null (never rejects with null) when a 'try' finds the key busy", async () => {
    const session = new ScriptedConnection([[null, 42]]);
    const { promise, released } = attempt(session, 'try', 5000);
    await expect(promise).resolves.toBeNull();
    expect(released).toEqual([session]);
  });

  it('answers a wait whose try finds the key busy with HELD_ELSEWHERE, and ends with nothing held when its backend declines', async () => {
    const session = new ScriptedConnection([[null, 42]]);
    const made = new LockAttempt(sessionsOf(session), 'k', '1', {
      mode: 'wait',
      waitTimeoutMs: 5000,
      startedAt: performance.now(),
      signal: undefined,
    });
    await expect(made.start()).resolves.toBe(HELD_ELSEWHERE);
    expect(made.over).toBe(false);
    made.decline();
    expect(made.over).toBe(true);
    await expect(made.done).resolves.toBeUndefined();
    // Only the try was sent: no wait in the server.
    expect(session.sent).toHaveLength(1);
  });

  it('rejects the second part at once, sending nothing, when the caller gave up between the two parts', async () => {
    const session = new ScriptedConnection([[null, 42]]);
    const controller = new AbortController();
    const made = new LockAttempt(sessionsOf(session), 'k', '1', {
      mode: 'wait',
      waitTimeoutMs: 5000,
      startedAt: performance.now(),
      signal: controller.signal,
    });
    await expect(made.start()).resolves.toBe(HELD_ELSEWHERE);
    controller.abort(new Error('client went away'));
    await expect(made.waitBehind()).rejects.toThrow('client went away');
    expect(made.over).toBe(true);
    expect(session.sent).toHaveLength(1);
  });
});

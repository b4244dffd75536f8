import { DeadlineQueue } from '../../internal/deadline-queue';
import type { LockConnection } from './lock-connection';
import type { LockSessions } from './lock-sessions';
import { lockStatements } from './postgres-lock.statements';
import { ProcessLocks } from './process-locks';
import { SessionTokens } from './session-tokens';

/**
 * The real ProcessLocks, LocalHandoffs and LockAttempt over one fake session that
 * answers each statement as the server would (a block of 1024 tokens per draw), so
 * the decisions at release are seen without a database: which statement a release
 * sends, and who gets the key with which token. The same paths against PostgreSQL:
 * test/postgres/postgres-local-handoff.e2e-spec.ts.
 */
class FakeSession {
  readonly pid = 7;
  readonly tokens = new SessionTokens();
  dead: Error | undefined;
  readonly sent: string[] = [];
  /** What `unlockIfWaited` answers: null = no other session waits (kept), true = unlocked for it. */
  waitedFor = false;
  private draws = 0;
  private readonly holders = new Set<unknown>();
  constructor() {
    this.tokens.block = 1024;
  }
  async tryLock(): Promise<unknown[]> {
    this.sent.push('try');
    const offer = this.tokens.offer();
    return [offer ? offer.token : String(1 + 1024 * this.draws++), this.pid];
  }
  async unlock(): Promise<unknown[]> {
    this.sent.push('unlock');
    return [true];
  }
  async unlockIfWaited(): Promise<unknown[]> {
    this.sent.push('unlock-if-waited');
    return [this.waitedFor ? true : null];
  }
  hold(holder: unknown): void {
    this.holders.add(holder);
  }
  letGo(holder: unknown): void {
    this.holders.delete(holder);
  }
  kill(reason: Error): void {
    this.dead = reason;
  }
  unref(): void {}
}

function fixture(handoff?: 'strict' | 'cohort') {
  const session = new FakeSession();
  const connection = session as unknown as LockConnection;
  const pool = {
    size: 1,
    take: () => ({ promise: Promise.resolve(connection), cancel: () => undefined }),
    release: () => undefined,
    share: () => undefined,
    discard: (c: FakeSession, reason: Error) => c.kill(reason),
    shareable: () => [][Symbol.iterator](),
    close: async () => undefined,
  };
  const sessions = {
    pool,
    statements: lockStatements('nsz_spec_seq'),
    connectTimeoutMs: 1000,
    refuse: () => undefined,
    assertUsable: () => undefined,
    backendError: (_key: string, cause: unknown) => cause as Error,
  } as unknown as LockSessions;
  const deadlines = new DeadlineQueue();
  const log = { warn: () => undefined, error: () => undefined };
  const locks = new ProcessLocks(sessions, 'spec', { handoff }, 1000, deadlines, log);
  const close = async () => {
    await locks.stopTaking();
    await locks.close();
    deadlines.clear();
  };
  return { session, locks, close };
}

const options = { waitTimeoutMs: 1000 } as const;

describe('ProcessLocks: what a release does with the next caller of this process', () => {
  it("cohort: hands the key on with the block's next token and no statement; the last release unlocks", async () => {
    const { session, locks, close } = fixture('cohort');
    const first = await locks.acquire('k', options);
    const second = locks.acquire('k', options);
    await first.release();
    const next = await second;
    expect([first.fencingToken, next.fencingToken]).toEqual([1n, 2n]);
    await next.release();
    expect(session.sent).toEqual(['try', 'unlock']);
    expect(locks.activeKeys).toBe(0);
    await close();
  });

  it('strict (the default): asks the server at each release; kept while no other session waits, unlocked for one that does', async () => {
    const { session, locks, close } = fixture();
    const first = await locks.acquire('k', options);
    const second = locks.acquire('k', options);
    await first.release();
    const local = await second;
    expect(local.fencingToken).toBe(2n);

    // Another session now waits in the server: the key goes back, and the local caller asks again.
    session.waitedFor = true;
    const third = locks.acquire('k', options);
    await local.release();
    const again = await third;
    await again.release();
    expect(session.sent).toEqual(['try', 'unlock-if-waited', 'unlock-if-waited', 'try', 'unlock']);
    expect(again.fencingToken > local.fencingToken).toBe(true);
    expect(locks.activeKeys).toBe(0);
    await close();
  });

  it("a caller's own handoff overrides the provider's mode for its release", async () => {
    const { session, locks, close } = fixture('strict');
    const first = await locks.acquire('k', { ...options, handoff: 'cohort' });
    const second = locks.acquire('k', options);
    await first.release();
    await (await second).release();
    expect(session.sent).toEqual(['try', 'unlock']);
    await close();
  });
});

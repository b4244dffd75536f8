import type { Client, QueryArrayConfig } from 'pg';
import { ServerSession, type SessionLossListener, type StatementInFlight } from '../../internal/server-session.lifecycle';
import { cancelTargetOf, sendCancelRequest } from './cancel.request';
import type { QueryWatchdog } from '../sessions/query.watchdog';
import type { LockStatements } from './postgres-lock.statements';
import type { HoldShape } from './hold.shape';
import { SessionChangedError } from './session-changed.error';
import { GIVE_BACK_IF_HELD, PING, SESSION_AUDIT } from './lock-session.sql';
import { destroySocket, type ClientInternals } from './pg-client.internals';
import { StatementBatch } from './statement.batch';
import { SessionClaims } from './session.claims';
import { SessionTokens, type TokenOffer } from '../sessions/session.tokens';

/** Who is told when a session ends while it holds a lock. */
export interface SessionHolder extends SessionLossListener {
  /** The advisory lock key it holds on the session (decimal). */
  readonly lockKey: string;
  /** The slot it holds besides, a holder of a group (`concurrency` > 1; decimal). */
  readonly slotKey?: string;
  /** The shape marks it holds besides, a reader or a group's holder (decimal). */
  readonly marks?: readonly string[];
}

/** An advisory lock the server showed on a session that nobody in this process stands behind (given back by the audit). */
export interface UnownedLock {
  readonly pid: number;
  readonly lockKey: string;
  /** The key it was claimed for, when a statement of this process took it. */
  readonly key: string | undefined;
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * One session of the lock pool: a `pg.Client` whose server session may hold
 * advisory locks (several at once). It watches its own end (`error`/`end` events,
 * a statement that gets no answer in time) and tells the pool and every lock it
 * holds, once (the lifecycle `ServerSession` shares with the MySQL driver). What is
 * PostgreSQL's: statements queue here (pg 8 deprecates queueing in the client),
 * batching, the session audit and the cancel request.
 */
export class LockSession extends ServerSession<SessionHolder, QueryWatchdog> {
  /** The fencing tokens its last `nextval` reserved, for its grants and local hand-offs. */
  readonly tokens = new SessionTokens();
  // What the session holds by this process's statements (written only by the lock statements below).
  private readonly claims = new SessionClaims();
  private auditing = false;
  // The statements in flight, oldest first (pg answers in order).
  private readonly inFlight: StatementInFlight[] = [];
  private tail: Promise<void> = Promise.resolve();
  private batches: { tries: StatementBatch; unlocks: StatementBatch } | undefined;

  constructor(
    private readonly client: Client,
    /** The backend pid of the session, checked again by every statement that returns it. */
    readonly pid: number,
    watchdog: QueryWatchdog,
    sessionTimeoutMs: number,
  ) {
    super(watchdog, sessionTimeoutMs, 'PostgreSQL');
  }

  /** Statements in flight (a liveness ping is skipped while one runs). */
  get busy(): boolean {
    return this.inFlight.length > 0;
  }

  /**
   * `pg_try_advisory_lock` (and the token) for `lockKey`, batched with other keys'
   * tries → [token or null, pid]. A reply read after the session ended grants
   * nothing (it rejects with why the session ended): the server freed the lock with
   * the session, and another session may hold it by now.
   */
  async tryLock(statements: LockStatements, lockKey: string, key: string): Promise<unknown[]> {
    this.claims.claim(lockKey, key);
    // An error leaves the claim: the caller gives the key back (unlock) or ends the session.
    const row = await (this.batches ??= batchesOf(this, statements)).tries.run(lockKey);
    if (row[0] === null || row[0] === undefined) this.claims.drop(lockKey);
    if (this.dead) throw this.dead;
    return row;
  }

  /**
   * A key set at once (`LockStatements.trySet`, `lockKeys` in canonical order, `keys`
   * the keys they stand for) → [first token or null when one was busy, keys taken
   * before it, pid]. The set takes the next `lockKeys.length` tokens of the session's
   * block when they are all left (offered when the statement's turn comes, as a try
   * does), else draws. An error leaves the claims: the caller ends the session.
   */
  async trySet(statements: LockStatements, lockKeys: readonly string[], keys: readonly string[]): Promise<unknown[]> {
    for (let i = 0; i < lockKeys.length; i++) this.claims.claim(lockKeys[i], keys[i]);
    const [row = []] = await this.queryRows(() => statements.trySet(lockKeys, this.offerOf(lockKeys.length)));
    if (row[0] === null || row[0] === undefined) for (const lockKey of lockKeys) this.claims.drop(lockKey);
    if (this.dead) throw this.dead;
    return row;
  }

  /** The offer of `count` consecutive tokens of the block (the first one's), or none when fewer are left. */
  private offerOf(count: number): TokenOffer | undefined {
    const first = this.tokens.offer();
    for (let i = 1; i < count && first; i++) if (!this.tokens.offer()) return undefined;
    return first;
  }

  /**
   * The blocking wait: `pg_advisory_lock` bounded on the server by `lock_timeout`
   * (`serverWaitMs`) → [token, pid]. PostgreSQL may end the wait with "lock
   * timeout" (55P03) although it granted the lock in that instant — the timeout's
   * interrupt stays pending after the grant, and a session-level lock outlives the
   * statement — so a timed-out wait gives back whatever it took before it rejects;
   * the session is then clean for its next use. A session where that cannot be made
   * sure of is ended.
   */
  async lockWait(statements: LockStatements, lockKey: string, key: string, serverWaitMs: number): Promise<unknown[]> {
    this.claims.claim(lockKey, key);
    let row: unknown[];
    try {
      row = await this.query(statements.lock(lockKey, `${serverWaitMs}ms`), serverWaitMs);
    } catch (error) {
      if ((error as { code?: string })?.code === LOCK_NOT_AVAILABLE && !this.dead) await this.giveBackAfterTimeout(lockKey, error as Error);
      throw error;
    }
    if (this.dead) throw this.dead;
    return row;
  }

  /** `pg_advisory_unlock` of `lockKey`, batched with other keys' unlocks → [whether it was held]. */
  async unlock(statements: LockStatements, lockKey: string): Promise<unknown[]> {
    this.claims.unlocking(lockKey);
    try {
      const row = await (this.batches ??= batchesOf(this, statements)).unlocks.run(lockKey);
      // Unlocked, or it was not held: the session holds it no more either way.
      this.claims.drop(lockKey);
      return row;
    } finally {
      this.claims.unlocked(lockKey);
    }
  }

  /** Strict local hand-off: unlocks only if another session waits → [true/false as unlock, or null: kept]. */
  async unlockIfWaited(statements: LockStatements, lockKey: string): Promise<unknown[]> {
    this.claims.unlocking(lockKey);
    try {
      const row = await this.query(statements.unlockIfWaited(lockKey));
      if (row[0] !== null && row[0] !== undefined) this.claims.drop(lockKey);
      return row;
    } finally {
      this.claims.unlocked(lockKey);
    }
  }

  /** The lock keys held on this session by holders of this process (the session audit counts them as owned). */
  heldLockKeys(): Set<string> {
    const keys = new Set<string>();
    for (const holder of this.heldBy()) {
      keys.add(holder.lockKey);
      if (holder.slotKey !== undefined) keys.add(holder.slotKey);
      for (const mark of holder.marks ?? []) keys.add(mark);
    }
    return keys;
  }

  // ---- holders sharing a key (ShapeStatements; docs/providers/postgres.md, "Several holders of one key") ----

  /** A reader's try: the key shared, its shape marker and the shape check (`ShapeStatements.tryShared`) → [token or null, pid]. */
  async tryShared(statements: LockStatements, lockKey: string, shape: HoldShape, key: string): Promise<unknown[]> {
    const tried = [lockKey, ...shape.marks];
    for (const lockKeyTaken of tried) this.claims.claim(lockKeyTaken, key);
    const row = await this.query(statements.shapes.tryShared(lockKey, shape.gateKey, shape.markerKey));
    if (row[0] === null || row[0] === undefined) for (const lockKeyTaken of tried) this.claims.drop(lockKeyTaken);
    if (this.dead) throw this.dead;
    return row;
  }

  /** The gate's holder, a reader: joins the readers unless another shape is inside → [token or null, pid]; with a token, the gate is let go. */
  async tryReader(statements: LockStatements, shape: HoldShape, key: string): Promise<unknown[]> {
    for (const mark of shape.marks) this.claims.claim(mark, key);
    const row = await this.query(statements.shapes.tryReader(shape.gateKey, shape.markerKey));
    if (row[0] === null || row[0] === undefined) for (const mark of shape.marks) this.claims.drop(mark);
    else this.claims.drop(shape.gateKey);
    if (this.dead) throw this.dead;
    return row;
  }

  /**
   * A group's try: the key shared, a free slot, its shape marker and the shape check
   * (see `ShapeStatements.tryGroup`) → [slot or null, token or null, pid]. The slots
   * this session may hold already are read when the statement is sent, and the slot
   * taken is claimed before the next statement goes (an audit must see it claimed).
   */
  async tryGroup(statements: LockStatements, lockKey: string, shape: HoldShape, key: string): Promise<unknown[]> {
    const { gateKey, slotBase, limit, markerKey } = shape;
    const tried = [lockKey, ...shape.marks];
    for (const lockKeyTaken of tried) this.claims.claim(lockKeyTaken, key);
    const [row] = await this.queryRows(
      () => statements.shapes.tryGroup(lockKey, gateKey, slotBase, limit, this.slotsClaimed(slotBase, limit), markerKey),
      0,
      ([answer]) => this.claimSlot(answer, slotBase, key, tried),
    );
    if (this.dead) throw this.dead;
    return row ?? [];
  }

  /** A group's or a reader's waiter: the gate, then the key shared, bounded by `lock_timeout` → [pid]. A failure leaves the claims: the caller ends the session. */
  async lockGate(statements: LockStatements, lockKey: string, gateKey: string, key: string, serverWaitMs: number): Promise<unknown[]> {
    this.claims.claim(gateKey, key);
    this.claims.claim(lockKey, key);
    const row = await this.query(statements.shapes.lockGate(lockKey, gateKey, `${serverWaitMs}ms`), serverWaitMs);
    if (this.dead) throw this.dead;
    return row;
  }

  /** The gate's holder tries the slots → [slot or null, token or null, pid]; with one (and no other shape inside), the gate is let go. */
  async trySlot(statements: LockStatements, shape: HoldShape, key: string): Promise<unknown[]> {
    const { gateKey, slotBase, limit, markerKey, marks } = shape;
    for (const mark of marks) this.claims.claim(mark, key);
    const [row] = await this.queryRows(
      () => statements.shapes.trySlot(gateKey, slotBase, limit, this.slotsClaimed(slotBase, limit), markerKey),
      0,
      ([answer]) => this.claimSlot(answer, slotBase, key, marks, gateKey),
    );
    if (this.dead) throw this.dead;
    return row ?? [];
  }

  /**
   * Gives back what a holder beside others (or an attempt that may have become one)
   * holds on this session: the key shared and the shape's marks, and a group's slot
   * (`slotKey`), telling the key's channel as `unlockShared`/`unlockGroup` do → the
   * row, each lock given back answering true in its first `1 + marks + slot` cells.
   */
  giveBackShaped(statements: LockStatements, lockKey: string, shape: HoldShape, slotKey: string | undefined): Promise<unknown[]> {
    const { markerKey, channel, gateKey, marks } = shape;
    return slotKey === undefined
      ? this.unlockShaped(statements.shapes.unlockShared(lockKey, markerKey, gateKey, channel), [lockKey, ...marks])
      : this.unlockShaped(statements.shapes.unlockGroup(lockKey, slotKey, channel, markerKey), [slotKey, lockKey, ...marks]);
  }

  /**
   * Gives back what `lockKeys` name with `config` → its row (each `true` when held):
   * the shared key, a slot, the gate. The caller checks the row.
   */
  async unlockShaped(config: QueryArrayConfig, lockKeys: readonly string[]): Promise<unknown[]> {
    for (const lockKey of lockKeys) this.claims.unlocking(lockKey);
    try {
      const row = await this.query(config);
      for (const lockKey of lockKeys) this.claims.drop(lockKey);
      return row;
    } finally {
      for (const lockKey of lockKeys) this.claims.unlocked(lockKey);
    }
  }

  /**
   * Resolves at the next NOTIFY on `channel` (the session LISTENs to it), after
   * `timeoutMs`, or when `wake` is called, whichever comes first.
   */
  notified(channel: string, timeoutMs: number): { readonly promise: Promise<void>; wake(): void } {
    let wake!: () => void;
    const promise = new Promise<void>((resolve) => {
      const onNotification = (message: { channel: string }): void => {
        if (message.channel === channel) done();
      };
      const timer = setTimeout(() => done(), timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.client.off('notification', onNotification);
        resolve();
      };
      this.client.on('notification', onNotification);
      wake = done;
    });
    return { promise, wake };
  }

  /** The advisory keys of the slots of the group at `slotBase` this session may hold (claimed). */
  slotKeysClaimed(slotBase: string, limit: number): string[] {
    return this.slotsClaimed(slotBase, limit).map((slot) => slotKeyOf(slotBase, slot));
  }

  /** The slots of the group at `slotBase` this session may hold (claimed), by index. */
  private slotsClaimed(slotBase: string, limit: number): number[] {
    const base = BigInt(slotBase);
    const held: number[] = [];
    for (const lockKey of this.claims.keys()) {
      const index = BigInt(lockKey) ^ base;
      if (index >= 0n && index < BigInt(limit)) held.push(Number(index));
    }
    return held;
  }

  /** After a group's statement: the slot it took is claimed; without one, what it tried (`tried`) is not held; with one, the gate it let go is not. */
  private claimSlot(row: unknown[] | undefined, slotBase: string, key: string, tried: readonly string[], gateKey?: string): void {
    const slot = row?.[0];
    if (slot === null || slot === undefined) {
      for (const lockKey of tried) this.claims.drop(lockKey);
      return;
    }
    this.claims.claim(slotKeyOf(slotBase, Number(slot)), key);
    if (gateKey !== undefined) this.claims.drop(gateKey);
  }

  /**
   * The session audit, which is also its liveness check: asks the server which
   * advisory locks the session holds and gives back, at once, each one that no claim
   * of this process stands behind — taken by no statement of ours, or claimed by one
   * whose owner is gone (`owners`, asked when the audit is sent, says which claimed
   * keys someone still holds, waits for or hands on). Resolves with what it gave
   * back. A session that turns out not to be the one it was opened on is ended.
   */
  async audit(owners: () => (lockKey: string) => boolean): Promise<UnownedLock[]> {
    if (this.dead || this.auditing) return [];
    this.auditing = true;
    let owned = new Set<string>();
    let claimed = new Set<string>();
    try {
      const [row] = await this.queryRows(() => {
        // Read when the audit goes on the wire: every statement before it has run on the server, none after it.
        owned = this.claims.owned(owners());
        claimed = this.claims.keys();
        return SESSION_AUDIT;
      });
      const pid = Number(row?.[0]);
      if (pid !== this.pid) {
        const error = new SessionChangedError(this.pid, pid);
        this.kill(error);
        throw error;
      }
      const unowned: UnownedLock[] = [];
      for (const lockKey of (row[1] as string[] | null) ?? []) {
        if (owned.has(lockKey)) continue;
        unowned.push({ pid, lockKey, key: this.claims.nameOf(lockKey) });
        await this.query({ text: 'SELECT pg_advisory_unlock($1::bigint)', values: [lockKey], rowMode: 'array' });
        // A claim nobody stood behind ends with it; a lock nobody claimed leaves later claims alone.
        if (claimed.has(lockKey)) this.claims.drop(lockKey);
      }
      return unowned;
    } finally {
      this.auditing = false;
    }
  }

  /**
   * Runs one statement and returns its first row. A statement with no answer
   * within `serverWaitMs` (how long the server may take by design: a lock wait
   * its `lock_timeout` ends) plus `sessionTimeoutMs` kills the connection. A slow
   * answer is still an answer: PostgreSQL keeps the session, and its locks,
   * however slow the path, so only silence that long counts as a lost session.
   */
  async query(config: QueryArrayConfig, serverWaitMs = 0): Promise<unknown[]> {
    return (await this.queryRows(config, serverWaitMs))[0] ?? [];
  }

  /**
   * Like `query`, with every row. `config` may be made when the statement's turn
   * comes (a batch that gathers what queued up behind the statement in flight).
   */
  async queryRows(
    config: QueryArrayConfig | (() => QueryArrayConfig),
    serverWaitMs = 0,
    /** Told the rows before the next statement is sent (what the answer proves the session holds is recorded in time). */
    onAnswer?: (rows: unknown[][]) => void,
  ): Promise<unknown[][]> {
    if (this.dead) throw this.dead;
    // Several uses share a session: statements queue here, one on the wire at a
    // time (pg 8 deprecates queueing inside the client).
    const queued = this.inFlight.length > 0;
    this.inFlight.push({ deadline: this.watchdog.started(serverWaitMs + this.sessionTimeoutMs) });
    const run = queued ? this.tail.then(() => this.send(config)) : this.send(config);
    this.tail = run.then(noop, noop);
    try {
      const { rows } = await run;
      onAnswer?.(rows);
      return rows;
    } catch (error) {
      // A statement that failed because the session died reports why it died.
      throw this.dead ?? error;
    } finally {
      this.inFlight.shift();
      this.watchdog.finished();
    }
  }

  private send(config: QueryArrayConfig | (() => QueryArrayConfig)): Promise<{ rows: unknown[][] }> {
    if (this.dead) return Promise.reject(this.dead);
    return this.client.query(typeof config === 'function' ? config() : config);
  }

  /** After a timed-out wait: unlocks `lockKey` if the server granted it after all; a session left in doubt is ended. */
  private async giveBackAfterTimeout(lockKey: string, timeout: Error): Promise<void> {
    try {
      await this.query({ name: 'nestjs-serialized:give-back', text: GIVE_BACK_IF_HELD, values: [lockKey], rowMode: 'array' });
      this.claims.drop(lockKey);
    } catch (error) {
      this.kill(
        new Error(`could not make sure a timed-out lock wait left nothing behind (${(error as Error)?.message ?? error})`, {
          cause: timeout,
        }),
      );
    }
  }

  /**
   * Checks that the session is alive and still the one it was opened on. Kills
   * the connection (and so tells its holder) when it is not.
   */
  async ping(): Promise<void> {
    const row = await this.query(PING);
    const pid = Number(row[0]);
    if (pid !== this.pid) {
      const error = new SessionChangedError(this.pid, pid);
      this.kill(error);
      throw error;
    }
  }

  /** Asks the server to cancel the running statement (best effort, no pool slot). */
  cancel(timeoutMs: number): Promise<void> {
    const target = cancelTargetOf(this.client);
    return target ? sendCancelRequest(target, timeoutMs) : Promise.resolve();
  }

  protected oldestStatement(): StatementInFlight | undefined {
    return this.inFlight[0];
  }

  protected destroy(): void {
    destroySocket(this.client);
  }

  /** The Terminate message. */
  protected closePolitely(): Promise<void> {
    return this.client.end();
  }

  /** pg fails the statements of a client whose socket closed: nothing to do here. */
  protected abandonStatements(): void {}

  /** Lets the process exit while this connection only sits in the pool. */
  unref(): void {
    (this.client as unknown as ClientInternals).unref?.();
  }

  ref(): void {
    (this.client as unknown as ClientInternals).ref?.();
  }
}

function noop(): void {}

/** The advisory key of slot `index` of the group whose slot keys start at `slotBase` (as the statements derive it: `base # i`). */
export function slotKeyOf(slotBase: string, index: number): string {
  return (BigInt(slotBase) ^ BigInt(index)).toString();
}

function batchesOf(session: LockSession, statements: LockStatements): { tries: StatementBatch; unlocks: StatementBatch } {
  return {
    tries: new StatementBatch(session, (key) => statements.tryLock(key, session.tokens.offer()), statements.tryLockMany),
    unlocks: new StatementBatch(session, statements.unlock, statements.unlockMany),
  };
}

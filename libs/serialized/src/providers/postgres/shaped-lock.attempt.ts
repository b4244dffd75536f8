import type { HoldShape } from './hold.shape';
import { MAX_LOCK_TIMEOUT_MS, type AttemptSessions } from './lock.attempt';
import { slotKeyOf, type LockSession } from './lock.session';
import { SessionChangedError } from './session-changed.error';
import { SessionLockAttempt, type SessionAttemptRequest } from '../sessions/session-lock.attempt';

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * How often the gate's holder looks at the slots again without being told: a holder
 * whose session ended (a crash) sends no NOTIFY, and its slot is free at once.
 */
export const SLOT_RETRY_MS = 1000;

/**
 * One caller of this process asking PostgreSQL for a key it holds beside others
 * (`shared`, or `concurrency` > 1): the layer lets every such caller ask on its own
 * (`LockLines`, `LockBackend.holdsTogether`). As `LockAttempt`: first a try on a
 * shared session (`tryShared`, `tryGroup`); only when it finds the key taken does a
 * waiting caller take a session of its own and wait in the server.
 *
 * A waiter of either shape waits for the key's gate, then for the key shared
 * (`lockGate`; PostgreSQL queues the key shared behind any writer queued before it):
 * the gate orders the waiters of every process. Its holder then looks again — a
 * reader at once (`tryReader`), a group member at its slots (`trySlot`) — and again on
 * each NOTIFY of a group's release and every `SLOT_RETRY_MS`, lets the gate go as it
 * gets in, and holds on. A look is refused while no slot is free or while another
 * session holds the key in another shape (readers beside a group, or a group of
 * another limit). A wait that fails or is given up ends its session (its server
 * frees whatever it took).
 */
export class ShapedLockAttempt extends SessionLockAttempt<LockSession> {
  private session: LockSession | undefined;
  private ownSession = false;
  private listening = false;
  private sleeping: { wake(): void } | undefined;
  /** The slot of the grant, for a group. */
  private slotTaken: number | undefined;
  /** A reader at the gate has looked once before listening. */
  private looked = false;

  constructor(
    private readonly sessions: AttemptSessions,
    key: string,
    /** The key's 64-bit advisory key (decimal). */
    readonly lockKey: string,
    readonly shape: HoldShape,
    request: SessionAttemptRequest,
  ) {
    super(sessions.pool, key, request, (failedKey, cause) => sessions.backendError(failedKey, cause));
  }

  /** The slot the grant took (a group), read once granted. */
  get slot(): number | undefined {
    return this.slotTaken;
  }

  /**
   * The advisory keys the attempt may hold on a session (the session audit counts
   * them as owned). A group's try claims the slot it took on its session as the
   * answer is read, before this attempt hears of it, and the attempt holds it until
   * its lock does: an audit sent on that session in between (right behind the try,
   * or behind the gate holder's UNLISTEN) must count it as owned, or it gives a
   * member's place away (test/postgres/postgres-holders.e2e-spec.ts, "an audit
   * sent right behind"). So every slot of the group claimed on its session counts;
   * those of other members there are theirs anyway.
   */
  get lockKeys(): string[] {
    const { gateKey, slotBase, limit, marks } = this.shape;
    return [this.lockKey, gateKey, ...marks, ...(this.session?.slotKeysClaimed(slotBase, limit) ?? [])];
  }

  protected stopServerWait(): void {
    this.sleeping?.wake();
    if (this.session && this.ownSession) void this.session.cancel(this.sessions.connectTimeoutMs);
  }

  protected lock(session: LockSession): void {
    this.ownSession = !this.shared;
    this.session = session;
    const left = this.remainingMs();
    const waits = this.mode === 'wait' && left >= 1 && this.waitsInServer && this.ownSession;
    if (!waits) return this.tryOn(session);
    const serverWaitMs = Math.min(Math.ceil(left), MAX_LOCK_TIMEOUT_MS);
    session.lockGate(this.sessions.statements, this.lockKey, this.shape.gateKey, this.key, serverWaitMs).then(
      (row) => (this.samePid(session, row[0]) ? this.atGate(session) : undefined),
      (error: unknown) => this.waitFailed(session, error),
    );
  }

  /** The try on a shared session (or, with no budget left, on its own one). */
  private tryOn(session: LockSession): void {
    const { statements } = this.sessions;
    const shape = this.shape;
    const answer = shape.shared
      ? session.tryShared(statements, this.lockKey, shape, this.key).then((row) => [row[0], row[1]] as const)
      : session.tryGroup(statements, this.lockKey, shape, this.key).then((row) => {
          if (row[0] !== null && row[0] !== undefined) this.slotTaken = Number(row[0]);
          return [row[1], row[2]] as const;
        });
    answer.then(
      ([token, pid]) => {
        if (!this.samePid(session, pid)) return;
        const granted = token !== null && token !== undefined;
        if (this.gaveUp) return this.windDown(session, granted, this.gaveUp.reason);
        if (granted) return this.granted(session, token, pid);
        if (this.mode === 'wait' && !this.waitsInServer && this.remainingMs() >= 1) return this.heldElsewhere(session);
        this.sessions.pool.release(session);
        return this.mode === 'try' ? this.finish(undefined, null) : this.finish(this.keyHeldError());
      },
      (error: unknown) => this.windDown(session, true, this.backendError(error)),
    );
  }

  /**
   * The waiter holds the gate and the key shared. A reader looks at once (in the
   * common case only a writer held it back, and it is gone now); a group member, and a
   * reader refused at its first look, listen for the releases of groups first, then look.
   */
  private atGate(session: LockSession): void {
    if (this.shape.shared && !this.listening && !this.looked) {
      this.looked = true;
      return this.look(session);
    }
    this.listening = true;
    session.query({ text: `LISTEN "${this.shape.channel}"`, rowMode: 'array' }).then(
      () => this.look(session),
      (error: unknown) => this.windDown(session, true, this.backendError(error)),
    );
  }

  /** The gate's holder looks: a reader joins the readers, a group member takes a free slot; refused, it looks again later. */
  private look(session: LockSession): void {
    if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
    const { statements } = this.sessions;
    const shape = this.shape;
    const answer = shape.shared
      ? session.tryReader(statements, shape, this.key).then((row) => [row[0], row[1]] as const)
      : session.trySlot(statements, shape, this.key).then((row) => {
          if (row[0] !== null && row[0] !== undefined) this.slotTaken = Number(row[0]);
          return [row[1], row[2]] as const;
        });
    answer.then(
      ([token, pid]) => {
        if (!this.samePid(session, pid)) return;
        if (token !== null && token !== undefined) {
          if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
          return this.stopListening(session, () => this.granted(session, token, pid));
        }
        if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
        if (!this.listening) return this.atGate(session);
        const left = this.remainingMs();
        if (left < 1) return this.leaveGate(session);
        const sleep = session.notified(shape.channel, Math.min(SLOT_RETRY_MS, Math.ceil(left)));
        this.sleeping = sleep;
        void sleep.promise.then(() => {
          this.sleeping = undefined;
          this.look(session);
        });
      },
      (error: unknown) => this.windDown(session, true, this.backendError(error)),
    );
  }

  /** The budget ran out at the gate: the gate and the key go back, and the session is reusable. */
  private leaveGate(session: LockSession): void {
    const { statements } = this.sessions;
    session.unlockShaped(statements.shapes.leaveGate(this.lockKey, this.shape.gateKey), [this.shape.gateKey, this.lockKey]).then(
      (row) => {
        if (row[0] !== true || row[1] !== true) return this.windDown(session, true, this.keyHeldError());
        this.stopListening(session, () => {
          this.sessions.pool.release(session);
          this.finish(this.keyHeldError());
        });
      },
      () => this.windDown(session, true, this.keyHeldError()),
    );
  }

  /** UNLISTEN before the session serves anyone else. */
  private stopListening(session: LockSession, then: () => void): void {
    if (!this.listening) return then();
    this.listening = false;
    session
      .query({ text: `UNLISTEN "${this.shape.channel}"`, rowMode: 'array' })
      .then(then, (error: unknown) => this.windDown(session, true, this.backendError(error)));
  }

  private granted(session: LockSession, token: unknown, pid: unknown): void {
    if (!this.samePid(session, pid)) return;
    if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
    if (this.ownSession) this.sessions.pool.share(session);
    const fencingToken = BigInt(token as string);
    session.tokens.granted(fencingToken);
    this.finish(undefined, { fencingToken, session });
  }

  private waitFailed(session: LockSession, error: unknown): void {
    if (this.gaveUp) return this.windDown(session, true, this.gaveUp.reason);
    const timedOut = (error as { code?: string })?.code === LOCK_NOT_AVAILABLE;
    this.windDown(session, true, timedOut ? this.keyHeldError() : this.backendError(error));
  }

  /** Whether the statement ran on the session it was sent on; if not, sessions are not pinned and every acquisition is refused. */
  private samePid(session: LockSession, pid: unknown): boolean {
    if (Number(pid) === session.pid) return true;
    const error = new SessionChangedError(session.pid, Number(pid));
    this.sessions.refuse(error);
    this.sessions.pool.discard(session, error);
    this.finish(this.backendError(error));
    return false;
  }

  protected get ownsSession(): boolean {
    return this.ownSession;
  }

  /** What the try may have taken: the key, its slot (a group's) and its marks. */
  protected giveBack(session: LockSession): Promise<unknown> {
    const slot = this.slotTaken;
    const slotKey = this.shape.shared || slot === undefined ? undefined : slotKeyOf(this.shape.slotBase, slot);
    return session.giveBackShaped(this.sessions.statements, this.lockKey, this.shape, slotKey);
  }
}

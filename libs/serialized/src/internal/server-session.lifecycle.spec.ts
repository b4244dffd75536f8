import { ServerSession, type OverdueCheck, type SessionLossListener, type StatementInFlight } from './server-session.lifecycle';

/** A session of no server: records what the lifecycle asked of it. */
class RecordingSession extends ServerSession<SessionLossListener> {
  readonly calls: string[] = [];
  readonly inFlight: StatementInFlight[] = [];
  goodbye: () => Promise<void> = () => Promise.resolve();

  constructor(readonly watched: Set<OverdueCheck>) {
    super({ add: (w) => watched.add(w), delete: (w) => watched.delete(w) }, 1000, 'TestDB');
  }

  protected oldestStatement(): StatementInFlight | undefined {
    return this.inFlight[0];
  }
  protected destroy(): void {
    this.calls.push('destroy');
  }
  protected closePolitely(): Promise<void> {
    this.calls.push('close');
    return this.goodbye();
  }
  protected abandonStatements(reason: Error): void {
    this.calls.push(`abandon: ${reason.message}`);
  }
}

function holder(): SessionLossListener & { told: Error[] } {
  const told: Error[] = [];
  return { told, sessionLost: (reason) => told.push(reason) };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('ServerSession (the lock sessions’ shared lifecycle)', () => {
  it('a kill tells the pool and every holder still on the session, once, and ends the watch', () => {
    const watched = new Set<OverdueCheck>();
    const session = new RecordingSession(watched);
    const [a, b, gone] = [holder(), holder(), holder()];
    const deaths: unknown[] = [];
    session.onDeath((s) => deaths.push(s));
    session.hold(a);
    session.hold(b);
    session.hold(gone);
    session.letGo(gone);
    expect(watched.has(session)).toBe(true);

    const reason = new Error('socket ended');
    session.kill(reason);
    session.kill(new Error('again'));

    expect(session.dead).toBe(reason);
    expect(a.told).toEqual([reason]);
    expect(b.told).toEqual([reason]);
    expect(gone.told).toEqual([]);
    expect(deaths).toEqual([session]);
    expect(session.calls).toEqual(['destroy', 'abandon: socket ended']);
    expect(watched.has(session)).toBe(false);
  });

  it('a holder registered on a session that already ended is told at once', () => {
    const session = new RecordingSession(new Set());
    const reason = new Error('killed');
    session.kill(reason);
    const late = holder();
    session.hold(late);
    expect(late.told).toEqual([reason]);
  });

  it('closing tells nobody, and destroys the socket when the goodbye is not answered in time', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const session = new RecordingSession(new Set());
      const h = holder();
      const deaths: unknown[] = [];
      session.onDeath((s) => deaths.push(s));
      session.hold(h);
      session.goodbye = () => new Promise(() => undefined);
      const ended = session.end(500);
      expect(session.dead?.message).toBe('the lock session was closed');
      jest.advanceTimersByTime(500);
      await ended;
      expect(session.calls).toEqual(['abandon: the lock session was closed', 'close', 'destroy']);
      expect(h.told).toEqual([]);
      expect(deaths).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends the session when its oldest statement is still overdue after I/O had its turn, not when it was answered meanwhile', async () => {
    const answered = new RecordingSession(new Set());
    const statement = { deadline: 10 };
    answered.inFlight.push(statement);
    answered.checkOverdue(5);
    answered.checkOverdue(10);
    answered.inFlight.shift(); // its answer was waiting in the socket
    await turn();
    expect(answered.dead).toBeUndefined();

    const silent = new RecordingSession(new Set());
    silent.inFlight.push({ deadline: 10 });
    silent.checkOverdue(11);
    await turn();
    expect(silent.dead?.message).toBe('TestDB did not answer within sessionTimeoutMs (1000 ms)');
  });
});

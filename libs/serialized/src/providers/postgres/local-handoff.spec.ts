import { LocalHandoffs, type HandoffSessions, type LocalHandoffHost } from './local-handoff';
import type { LockConnection } from './lock-connection';

describe('LocalHandoffs', () => {
  const host = {} as LocalHandoffHost;
  const sessions = {} as HandoffSessions;
  const session = (block: number) => ({ tokens: { block } }) as unknown as LockConnection;

  it('starts a run on a session with a block of tokens, and none with increment 1 or with hand-offs off', () => {
    const handoffs = new LocalHandoffs(sessions, host, {}, () => undefined);
    expect(handoffs.cohortOf(session(1024))).toEqual({ mode: 'strict' });
    expect(handoffs.cohortOf(session(1))).toBeUndefined();
    expect(new LocalHandoffs(sessions, host, { maxLocalHandOffs: 0 }, () => undefined).cohortOf(session(1024))).toBeUndefined();
    expect(new LocalHandoffs(sessions, host, { handoff: 'cohort' }, () => undefined).cohortOf(session(1024))).toEqual({ mode: 'cohort' });
  });

  it('refuses invalid options with a message naming them', () => {
    expect(() => new LocalHandoffs(sessions, host, { handoff: 'fair' as never }, () => undefined)).toThrow(/handoff "fair" is invalid: expected 'strict' or 'cohort'/);
    expect(() => new LocalHandoffs(sessions, host, { maxLocalHandOffs: -1 }, () => undefined)).toThrow(/maxLocalHandOffs -1 is invalid/);
    expect(() => new LocalHandoffs(sessions, host, { maxLocalHandOffs: 1.5 }, () => undefined)).toThrow(/maxLocalHandOffs 1.5 is invalid/);
  });
});

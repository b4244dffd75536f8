import { LockBackendError, LockLostError } from '../errors';
import { BackendOutageLog } from './backend-outage.log';

describe('BackendOutageLog', () => {
  const setup = () => {
    const lines: string[] = [];
    let now = 0;
    const log = new BackendOutageLog(
      { error: (m: string) => lines.push(`error ${m}`), log: (m: string) => lines.push(`log ${m}`) },
      60_000,
      () => now,
    );
    return { lines, log, advance: (ms: number) => (now += ms) };
  };
  const refused = (key: string, handler: string) =>
    new LockBackendError('Redis is unreachable: connect ECONNREFUSED 10.0.0.1:6379', {
      key,
      handler,
      cause: new Error('connect ECONNREFUSED 10.0.0.1:6379'),
    });

  it('logs an outage once, whatever the lock keys and handlers of the requests it fails', () => {
    const { lines, log } = setup();
    for (let n = 0; n < 50; n++) log.report(refused(`scope:${n}`, n % 2 ? 'A#a' : 'B#b'), n % 2 ? 'A#a' : 'B#b');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^error Lock backend unavailable: B#b answered 503\. LockBackendError: Redis is unreachable: connect ECONNREFUSED 10\.0\.0\.1:6379/,
    );
  });

  it('logs a different error at once, and the same one again after a request got through', () => {
    const { lines, log } = setup();
    log.report(refused('k:1', 'A#a'), 'A#a');
    log.report(new LockBackendError('PostgreSQL cannot be used for locks: role "x" does not exist', { key: 'k:2' }), 'A#a');
    log.report(refused('k:3', 'A#a'), 'A#a');
    log.report(refused('k:4', 'A#a'), 'A#a');
    expect(lines).toHaveLength(3);
    log.recovered();
    expect(lines[3]).toBe('log Lock backend usable again; 1 more requests were answered 503 after the error logged last');
    log.recovered(); // nothing to say twice
    log.report(refused('k:5', 'A#a'), 'A#a');
    expect(lines).toHaveLength(5);
  });

  it('logs the same error again once the quiet period passed, with how many it left out', () => {
    const { lines, log, advance } = setup();
    log.report(refused('k:1', 'A#a'), 'A#a');
    advance(30_000);
    log.report(refused('k:2', 'A#a'), 'A#a');
    log.report(refused('k:3', 'A#a'), 'A#a');
    advance(30_000);
    log.report(refused('k:4', 'A#a'), 'A#a');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('(2 more 503s with this error since it was last logged)');
  });

  it('redacts passwords in what it logs, including the cause', () => {
    const { lines, log } = setup();
    const cause = new Error('cannot parse redis://app:s3cret@cache:6379');
    log.report(new LockLostError('k', 'renewal failed', cause), 'A#a');
    expect(lines[0]).toContain('redis://app:***@cache:6379');
    expect(lines[0]).not.toContain('s3cret');
  });
});

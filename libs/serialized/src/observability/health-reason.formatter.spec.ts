import { healthReason } from './health-reason.formatter';

describe('healthReason', () => {
  it.each([
    ['PostgreSQL cannot be reached: connect ECONNREFUSED 127.0.0.1:5433', 'PostgreSQL cannot be reached: connect ECONNREFUSED <host>'],
    ['connect ECONNREFUSED [::1]:6379', 'connect ECONNREFUSED <host>'],
    ['getaddrinfo ENOTFOUND db.internal', 'getaddrinfo ENOTFOUND <host>'],
    ['could not connect to postgres://app:secret@db.internal:5432/shop', 'could not connect to postgres://<host>/shop'],
    ['timeout connecting to cache.prod.example:6380 after 3000 ms', 'timeout connecting to <host> after 3000 ms'],
    ['Redis did not answer within 500 ms', 'Redis did not answer within 500 ms'],
  ])('%s → %s', (text, reason) => {
    expect(healthReason(text)).toBe(reason);
  });
});

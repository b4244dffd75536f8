import { redactUrls } from './secrets.redact';

describe('redactUrls', () => {
  it.each([
    ['redis://:s3cret@cache:6379', 'redis://:***@cache:6379'],
    ['redis://default:s3cret@cache:6379/0', 'redis://default:***@cache:6379/0'],
    ['rediss://s3cret@cache:6380', 'rediss://***@cache:6380'],
    ['postgres://app:s3cret@db:5432/app?sslmode=require', 'postgres://app:***@db:5432/app?sslmode=require'],
    ['postgresql://app:p@ss@word@db/app', 'postgresql://app:***@db/app'],
    // As docker --env-file keeps them, and as JSON.stringify escapes them.
    ['"redis://:s3cret@cache:6379"', '"redis://:***@cache:6379"'],
    [JSON.stringify('"redis://u:s3cret@cache:6379"'), JSON.stringify('"redis://u:***@cache:6379"')],
    ["REDIS_URL='redis://u:s3cret@cache' is invalid", "REDIS_URL='redis://u:***@cache' is invalid"],
    ['two: redis://a:s3cret@h1 and postgres://b:s3cret@h2/db', 'two: redis://a:***@h1 and postgres://b:***@h2/db'],
    ['host=db user=app password=s3cret port=5432', 'host=db user=app password=*** port=5432'],
    ["password='s3 cret' host=db", 'password=*** host=db'],
    ['postgres://db/app?user=app&password=s3cret&ssl=true', 'postgres://db/app?user=app&password=***&ssl=true'],
  ])('%s', (text, expected) => {
    expect(redactUrls(text)).toBe(expected);
    expect(redactUrls(text)).not.toContain('s3cret');
  });

  it('leaves text without credentials as it is', () => {
    for (const text of [
      'redis://127.0.0.1:6379',
      'connect ECONNREFUSED 127.0.0.1:6399',
      'mail me at someone@example.com',
      'password authentication failed for user "app"',
    ]) {
      expect(redactUrls(text)).toBe(text);
    }
  });
});

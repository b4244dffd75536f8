import fs from 'node:fs';
import path from 'node:path';
import { resolveSerializedOptions } from 'nestjs-serialized/config/serialized-options.resolver';
import { SERIALIZED_ENV_ACCEPTS } from 'nestjs-serialized/config/serialized-environment.reader';
import { IDEMPOTENCY_ENV_ACCEPTS, readIdempotencyTtlMs } from 'nestjs-serialized/idempotency/idempotency-environment.reader';
import { APP_ENV_ACCEPTS, loadAppConfig } from './app.config';

/** The `NAME=value` lines of .env.example (commented-out lines are the tests' and benchmarks' own). */
function readEnvExample(): Record<string, string> {
  const text = fs.readFileSync(path.join(__dirname, '..', '..', '.env.example'), 'utf8');
  const entries = text
    .split('\n')
    .map((line) => /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1], match[2]] as const);
  return Object.fromEntries(entries);
}

describe('.env.example', () => {
  const example = readEnvExample();
  const readByCode = [
    ...new Set([...Object.keys(SERIALIZED_ENV_ACCEPTS), ...Object.keys(IDEMPOTENCY_ENV_ACCEPTS), ...Object.keys(APP_ENV_ACCEPTS)]),
  ].sort();

  it('lists every variable the library and the example app read, and no other', () => {
    expect(Object.keys(example).sort()).toEqual(readByCode);
  });

  it("shows the example app's defaults: its values configure the app exactly as an empty environment does", () => {
    expect(loadAppConfig(example)).toEqual(loadAppConfig({}));
  });

  it("shows the library's defaults: its values resolve to the same options as an empty environment", () => {
    // Everything but the URLs, which the example names because the example app uses them.
    const pick = ({ redis, postgres, ...rest }: ReturnType<typeof resolveSerializedOptions>) => ({
      ...rest,
      redis: { ...redis, url: undefined },
      postgres: { ...postgres, connectionString: undefined },
    });
    expect(pick(resolveSerializedOptions({}, example))).toEqual(pick(resolveSerializedOptions({}, {})));
    expect(readIdempotencyTtlMs(example)).toBe(readIdempotencyTtlMs({}));
  });
});

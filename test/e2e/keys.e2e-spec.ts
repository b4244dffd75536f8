import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { LockBusyError, LockService } from 'nestjs-serialized';
import { uniqueId, waitFor } from '../support/timing';
import { Gates } from './fixtures/keys.controller';
import { ADAPTERS, startTestApp, type Adapter } from './http-app';

/** A user id no other test of this run uses (the keys are per app, the app per adapter). */
let nextUser = 4_200_000 + Math.floor(Math.random() * 1_000_000);

describe.each(ADAPTERS.map((a) => [a]))('lock keys over HTTP (%s)', (adapter: Adapter) => {
  let app: INestApplication;
  let url: string;
  let gates: Gates;

  beforeAll(async () => {
    ({ app, url } = await startTestApp(adapter));
    gates = app.get(Gates);
  });
  afterAll(async () => {
    await app.close();
  });

  const post = (path: string) => request(url).post(path);
  /** supertest sends lazily; this starts the request now. */
  const start = (path: string) => post(path).then((response) => response);
  /**
   * Starts a request whose handler stays inside its section until `gates.release(tag)`,
   * and resolves once the handler is inside (with the response still to come).
   */
  const holding = async (path: string, tag: string): Promise<{ response: Promise<request.Response> }> => {
    const response = start(`${path}${path.includes('?') ? '&' : '?'}hold=${tag}`);
    await waitFor(() => gates.entered.includes(tag), 10_000, `the handler of ${path} to enter`);
    return { response };
  };

  describe('two (scope, value) pairs never share a lock', () => {
    it("scope 'A' with value 'B:<id>' and scope 'A:B' with value '<id>' are different locks, each still exclusive", async () => {
      const id = uniqueId('k');
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/scope-a/B%3A${id}`, tag);
      try {
        // A different lock: the other pair enters while the first is held (mode 'reject' would say 429 otherwise).
        const other = await post(`/fx-keys/scope-ab/${id}`);
        expect({ status: other.status, body: other.body }).toEqual({ status: 201, body: { ok: true } });
        // The same pair still excludes.
        const same = await post(`/fx-keys/scope-a/B%3A${id}`);
        expect(same.status).toBe(429);
        expect(same.body.code).toBe('LOCK_BUSY');
      } finally {
        gates.release(tag);
      }
      expect((await holder.response).status).toBe(201);
    });

    it('and the other way round: holding scope A:B does not shut out scope A', async () => {
      const id = uniqueId('k');
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/scope-ab/${id}`, tag);
      try {
        expect((await post(`/fx-keys/scope-a/B%3A${id}`)).status).toBe(201);
        expect((await post(`/fx-keys/scope-ab/${id}`)).status).toBe(429);
      } finally {
        gates.release(tag);
      }
      expect((await holder.response).status).toBe(201);
    });

    it("values ':' and '%3A' (the escape itself) are different locks", async () => {
      const id = uniqueId('k');
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/scope-a/%253A${id}`, tag); // the value is "%3A<id>"
      try {
        expect((await post(`/fx-keys/scope-a/%3A${id}`)).status).toBe(201); // the value is ":<id>"
        expect((await post(`/fx-keys/scope-a/%253A${id}`)).status).toBe(429);
      } finally {
        gates.release(tag);
      }
      expect((await holder.response).status).toBe(201);
    });

    it("a key without ':' or '%' is unchanged: lockService.run('<scope>:<value>') takes the handler's lock", async () => {
      const id = uniqueId('k');
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/plain/${id}`, tag);
      try {
        const run = app.get(LockService).run(`fx-plain:${id}`, () => 'ran', { mode: 'reject' });
        await expect(run).rejects.toBeInstanceOf(LockBusyError);
      } finally {
        gates.release(tag);
      }
      expect((await holder.response).status).toBe(201);
    });

    it("the lock key shows the value, with ':' and '%' of the scope and the value escaped", async () => {
      const held = (value: string, probe: string) =>
        post(`/fx-keys/held/${encodeURIComponent(value)}?probe=${encodeURIComponent(probe)}`).then((r) => r.body.held);
      expect(await held('42', 'fx%3Aheld:42')).toBe(true);
      expect(await held('a:b%c', 'fx%3Aheld:a%3Ab%25c')).toBe(true);
      expect(await held('a:b%c', 'fx:held:a:b%c')).toBe(false);
    });
  });

  describe('values every backend encodes the same way', () => {
    it.each([
      ['a lone high surrogate', '\ud800'],
      ['a lone low surrogate', '\udc00'],
      ['a lone surrogate inside text', 'user-\udfff-1'],
      ['surrogates in the wrong order', '\udc00\ud800'],
    ])('%s is a 400 naming the key (UTF-8 would turn it into U+FFFD)', async (_name, value) => {
      const response = await post('/fx-keys/value').send({ value });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('SERIALIZATION_KEY_INVALID');
      expect(response.body.message).toBe(
        'Serialization key "body.value" is not well-formed Unicode (it has a lone surrogate) (looked in body.value)',
      );
    });

    it.each([
      ['a single space', ' '],
      ['tabs and new lines', '\t\n \r'],
      ['a no-break space', '\u00a0'],
      ['an ideographic space', '\u3000'],
    ])('a value of only white space (%s) is a 400', async (_name, value) => {
      const response = await post('/fx-keys/value').send({ value });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('SERIALIZATION_KEY_MISSING');
      expect(response.body.message).toBe('Serialization key "body.value" is only white space (looked in body.value)');
    });

    it.each([
      ['U+FFFD itself', '\ufffd'],
      ['a surrogate pair (emoji)', '\ud83d\ude00'],
      ['text with spaces around it', ' a b '],
    ])('%s is a valid value', async (_name, value) => {
      const response = await post('/fx-keys/value').send({ value });
      expect(response.status).toBe(201);
      expect(response.body.value).toBe(value);
    });
  });

  describe('canonical keys', () => {
    it('raw values: /raw-users/42 and /raw-users/042 are two locks although ParseIntPipe makes them one user', async () => {
      const user = nextUser++;
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/raw-users/${user}`, tag);
      try {
        expect((await post(`/fx-keys/raw-users/0${user}`)).status).toBe(201);
      } finally {
        gates.release(tag);
      }
      expect((await holder.response).status).toBe(201);
    });

    it('with transform: Number, /users/42, /users/042 and /users/0042 are one lock', async () => {
      const user = nextUser++;
      const tag = uniqueId('hold');
      const holder = await holding(`/fx-keys/users/${user}`, tag);
      try {
        for (const path of [`/fx-keys/users/0${user}`, `/fx-keys/users/00${user}`, `/fx-keys/users/${user}`]) {
          const response = await post(path);
          expect({ path, status: response.status }).toEqual({ path, status: 429 });
        }
        // Another user is another lock.
        expect((await post(`/fx-keys/users/${user + 1_000_000}`)).status).toBe(201);
      } finally {
        gates.release(tag);
      }
      const first = await holder.response;
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ userId: user, held: true });
      // The lock is named by the canonical value, however the client wrote it.
      expect((await post(`/fx-keys/users/000${user}`)).body).toEqual({ userId: user, held: true });
    });

    it('a value the transform cannot make a key of is a 400 naming the key', async () => {
      const response = await post('/fx-keys/users/forty-two');
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('SERIALIZATION_KEY_INVALID');
      expect(response.body.message).toContain('"userId"');
      expect(response.body.message).toContain('transform');
    });
  });
});

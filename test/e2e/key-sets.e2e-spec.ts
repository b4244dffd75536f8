import type { INestApplication } from '@nestjs/common';
import { LockService } from 'nestjs-serialized';
import request from 'supertest';
import { uniqueId, waitFor } from '../support/timing';
import { Gates } from './fixtures/keys.controller';
import { Accounts } from './fixtures/transfers.controller';
import { ADAPTERS, postAndLeave, startTestApp, type Adapter } from './http-app';

/**
 * Several keys at once over HTTP (docs/semantics.md, *Several keys at once*): `@Serialized(['params.fromId',
 * 'params.toId'])` and a key function returning an array hold both accounts
 * together; `@SerializedLock()` gives the array; 400 / 429 codes.
 */
describe.each(ADAPTERS.map((a) => [a]))('key sets over HTTP (%s)', (adapter: Adapter) => {
  let app: INestApplication;
  let url: string;
  let gates: Gates;
  let accounts: Accounts;

  beforeAll(async () => {
    ({ app, url } = await startTestApp(adapter));
    gates = app.get(Gates);
    accounts = app.get(Accounts);
  });
  afterAll(async () => {
    await app.close();
  });

  const post = (path: string) => request(url).post(path);

  it('random transfers between 6 accounts in both directions: money conserved, no overlap per account', async () => {
    const ids = Array.from({ length: 6 }, () => uniqueId('acc'));
    for (const id of ids) accounts.balances.set(id, 1000);
    const overlapsBefore = accounts.overlaps;
    const calls = Array.from({ length: 120 }, (_, i) => {
      const from = ids[Math.floor(Math.random() * 6)];
      let to = ids[Math.floor(Math.random() * 6)];
      if (to === from) to = ids[(ids.indexOf(from) + 1) % 6];
      return post(`/fx-transfers/${i % 2 ? 'array' : 'fn'}/${from}/${to}?amount=${1 + (i % 7)}`).then((r) => r.status);
    });
    const statuses = await Promise.all(calls);
    expect(statuses.every((status) => status === 201)).toBe(true);
    expect(ids.reduce((sum, id) => sum + accounts.balances.get(id)!, 0)).toBe(6000);
    expect(accounts.overlaps - overlapsBefore).toBe(0);
  });

  it('@SerializedLock() gives the locks in the order of the keys, each with its own token; one account twice is one lock', async () => {
    const [a, b] = [uniqueId('a'), uniqueId('b')];
    for (const form of ['array', 'fn']) {
      const response = await post(`/fx-transfers/${form}/${b}/${a}`);
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ keys: [`account:${b}`, `account:${a}`], tokens: ['bigint', 'bigint'], isArray: true });
    }
    const same = await post(`/fx-transfers/array/${a}/${a}`);
    expect(same.body.keys).toEqual([`account:${a}`]);
  });

  it('reject mode: one busy account → 429 LOCK_BUSY, and the other account is free right after', async () => {
    const [a, b] = [uniqueId('a'), uniqueId('b')].sort();
    const tag = uniqueId('hold');
    const holder = post(`/fx-transfers/one/${b}?hold=${tag}`).then((r) => r);
    await waitFor(() => gates.entered.includes(tag), 10_000, 'the holder of b to enter');
    try {
      const refused = await post(`/fx-transfers/reject/${a}/${b}`);
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('LOCK_BUSY');
      // 'a' sorts first, so it was taken and then let go before the 429 went out.
      const free = await post(`/fx-transfers/one/${a}`);
      expect(free.status).toBe(201);
    } finally {
      gates.release(tag);
    }
    expect((await holder).status).toBe(201);
  });

  it('a client that leaves while its set waits: the handler never runs, and the account already taken is let go', async () => {
    const [a, b] = [uniqueId('a'), uniqueId('b')].sort();
    accounts.balances.set(a, 10);
    accounts.balances.set(b, 10);
    const tag = uniqueId('hold');
    const holder = post(`/fx-transfers/one/${b}?hold=${tag}`).then((r) => r);
    await waitFor(() => gates.entered.includes(tag), 10_000, 'the holder of b to enter');
    try {
      // Takes 'a' (it sorts first), waits for 'b', and its client leaves meanwhile.
      const leaving = postAndLeave(url, `/fx-transfers/array/${a}/${b}`);
      const waitingForB = async () => (await app.get(LockService).inspect(`account:${b}`)).waitingHere;
      await waitFor(async () => (await waitingForB()) === 1, 5000, "the set to wait for 'b'");
      expect((await post(`/fx-transfers/one/${a}`)).status).toBe(429); // held by the waiting set
      leaving.leave();
      await waitFor(async () => (await post(`/fx-transfers/one/${a}`)).status === 201, 5000, "'a' to be free again");
      // It left the line for 'b' too: nothing of it is left to run when the holder lets go.
      expect(await waitingForB()).toBe(0);
    } finally {
      gates.release(tag);
    }
    expect((await holder).status).toBe(201);
    expect([accounts.balances.get(a), accounts.balances.get(b)]).toEqual([10, 10]);
  });

  it('a holder of a set excludes single-key callers of each of its accounts', async () => {
    const [a, b] = [uniqueId('a'), uniqueId('b')];
    const tag = uniqueId('hold');
    const holder = post(`/fx-transfers/reject/${a}/${b}?hold=${tag}`).then((r) => r);
    await waitFor(() => gates.entered.includes(tag), 10_000, 'the set holder to enter');
    try {
      for (const id of [a, b]) expect((await post(`/fx-transfers/one/${id}`)).status).toBe(429);
    } finally {
      gates.release(tag);
    }
    expect((await holder).status).toBe(201);
    for (const id of [a, b]) expect((await post(`/fx-transfers/one/${id}`)).status).toBe(201);
  });

  it('400 SERIALIZATION_KEY_MISSING for a missing member or an empty set; 400 SERIALIZATION_KEY_INVALID past 16 distinct keys', async () => {
    const missing = await post(`/fx-transfers/query/${uniqueId('a')}`);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 'SERIALIZATION_KEY_MISSING' });
    expect(missing.body.message).toContain('query.toId');

    const empty = await post('/fx-transfers/list').send({ ids: [] });
    expect({ status: empty.status, code: empty.body.code }).toEqual({ status: 400, code: 'SERIALIZATION_KEY_MISSING' });
    const hole = await post('/fx-transfers/list').send({ ids: ['x', null] });
    expect({ status: hole.status, code: hole.body.code }).toEqual({ status: 400, code: 'SERIALIZATION_KEY_MISSING' });

    const ids = Array.from({ length: 17 }, (_, i) => uniqueId(`k${i}`));
    const tooMany = await post('/fx-transfers/list').send({ ids });
    expect({ status: tooMany.status, code: tooMany.body.code }).toEqual({ status: 400, code: 'SERIALIZATION_KEY_INVALID' });
    expect(JSON.stringify(tooMany.body)).not.toContain(ids[0]);
    const sixteen = await post('/fx-transfers/list').send({ ids: [...ids.slice(0, 16), ids[0]] });
    expect(sixteen.status).toBe(201);
    expect(sixteen.body.keys).toHaveLength(16);
    const notScalar = await post('/fx-transfers/list').send({ ids: ['x', { nested: true }] });
    expect({ status: notScalar.status, code: notScalar.body.code }).toEqual({ status: 400, code: 'SERIALIZATION_KEY_INVALID' });
  });
});

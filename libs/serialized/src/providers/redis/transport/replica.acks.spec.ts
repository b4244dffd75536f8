import type { Redis } from 'ioredis';
import type { ScriptClient } from '../../../internal/lua.script';
import { ReplicaAcks } from './replica.acks';

/** A standalone client that records what was written, in order, and on which socket. */
function fakeClient(options: { noScript?: boolean; acks?: number[] } = {}) {
  const written: string[] = [];
  const acks = [...(options.acks ?? [1, 1])];
  const client = {
    stream: { id: 1 } as object,
    evalsha: (sha: string) => {
      written.push(`evalsha ${sha}`);
      return options.noScript ? Promise.reject(new Error('NOSCRIPT No matching script')) : Promise.resolve('reply');
    },
    eval: () => {
      written.push('eval');
      return Promise.resolve('reply');
    },
    wait: (n: number, t: number) => {
      written.push(`wait ${n} ${t} on ${(client.stream as { id: number }).id}`);
      return Promise.resolve(acks.shift() ?? 0);
    },
  };
  return { client, written };
}

/** Runs a script the way LuaScript does: EVALSHA, and EVAL after NOSCRIPT. */
const script = (c: ScriptClient) =>
  c.evalsha('abc', 1, 'k').catch((error: Error) => {
    if (!error.message.startsWith('NOSCRIPT')) throw error;
    return c.eval('return 1', 1, 'k');
  });

describe('ReplicaAcks (WAIT behind a write, on its socket)', () => {
  const acks = new ReplicaAcks(1, 200, undefined);

  it('writes WAIT right behind the script, in the same turn, and reports its count', async () => {
    const { client, written } = fakeClient({ acks: [1] });
    const result = await acks.after(client as unknown as Redis, 'k', script);
    expect(written).toEqual(['evalsha abc', 'wait 1 200 on 1']);
    expect(result).toEqual({ reply: 'reply', acked: 1 });
    expect(acks.enough(result.acked)).toBe(true);
  });

  it('after NOSCRIPT, counts the WAIT behind the EVAL that made the write, not the one behind the refused EVALSHA', async () => {
    const { client, written } = fakeClient({ noScript: true, acks: [5, 0] });
    const result = await acks.after(client as unknown as Redis, 'k', script);
    expect(written).toEqual(['evalsha abc', 'wait 1 200 on 1', 'eval', 'wait 1 200 on 1']);
    expect(result.acked).toBe(0);
  });

  it('takes a WAIT answered on another socket (a reconnect: the new connection has written nothing) as no acknowledgement', async () => {
    const { client } = fakeClient({ acks: [1] });
    const result = await acks.after(client as unknown as Redis, 'k', (c) => {
      const reply = script(c);
      // The connection is replaced (a fail-over) before WAIT answers.
      client.stream = { id: 2 };
      return reply;
    });
    expect(result.acked).toBe(0);
    expect(acks.enough(result.acked)).toBe(false);
  });

  it('says why a grant does not count, as a LockBackendError naming the key', () => {
    const error = new ReplicaAcks(2, 150, undefined).unacked('orders:7', 'A grant', 1);
    expect(error.name).toBe('LockBackendError');
    expect(error.message).toBe(
      'A grant was not confirmed by 2 Redis replicas within 150 ms (1 acknowledged); it does not count (lock "orders:7")',
    );
  });
});

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isScriptClient, LuaScript, type ScriptClient } from './lua.script';

/** A client that records what it was sent; EVALSHA answers with `evalshaReply` (a value, or an error to throw). */
function recordingClient(evalshaReply: unknown): ScriptClient & { sent: unknown[][] } {
  const sent: unknown[][] = [];
  return {
    sent,
    evalsha: async (...args) => {
      sent.push(['evalsha', ...args]);
      if (evalshaReply instanceof Error) throw evalshaReply;
      return evalshaReply;
    },
    eval: async (...args) => {
      sent.push(['eval', ...args]);
      return 'from eval';
    },
  };
}

describe('LuaScript', () => {
  const source = "return redis.call('GET', KEYS[1])";
  const sha = createHash('sha1').update(source).digest('hex');

  it('sends EVALSHA with the SHA-1 of its source, its key count, then keys and arguments', async () => {
    const client = recordingClient('value');
    await expect(new LuaScript('get', source, 1).run(client, ['k', 'a', 2])).resolves.toBe('value');
    expect(client.sent).toEqual([['evalsha', sha, 1, 'k', 'a', 2]]);
  });

  it('falls back to EVAL with the source when the server does not know the script (NOSCRIPT)', async () => {
    const client = recordingClient(new Error('NOSCRIPT No matching script. Please use EVAL.'));
    await expect(new LuaScript('get', source, 1).run(client, ['k'])).resolves.toBe('from eval');
    expect(client.sent).toEqual([
      ['evalsha', sha, 1, 'k'],
      ['eval', source, 1, 'k'],
    ]);
  });

  it('passes any other error through, without resending the script', async () => {
    const client = recordingClient(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'));
    await expect(new LuaScript('get', source, 1).run(client, ['k'])).rejects.toThrow('WRONGTYPE');
    expect(client.sent).toHaveLength(1);
  });

  it('loads <dir>/<name>.lua, with a prelude in front when given', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lua-script-'));
    try {
      fs.writeFileSync(path.join(dir, 'get.lua'), source);
      expect(LuaScript.load(dir, 'get', 1).source).toBe(source);
      const withPrelude = LuaScript.load(dir, 'get', 1, 'local rcall = redis.call');
      expect(withPrelude.source).toBe(`local rcall = redis.call\n${source}`);
      expect(withPrelude.sha).toBe(createHash('sha1').update(withPrelude.source).digest('hex'));
      expect(withPrelude).toMatchObject({ name: 'get', numberOfKeys: 1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('recognises a client that can run scripts', () => {
    expect(isScriptClient(recordingClient(null))).toBe(true);
    expect(isScriptClient({ evalsha: () => undefined })).toBe(false);
    expect(isScriptClient(null)).toBe(false);
  });
});

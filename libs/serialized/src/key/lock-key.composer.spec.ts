import { composeLockKey, escapeLockKeyPart, hasLoneSurrogate } from './lock-key.composer';

describe('composeLockKey', () => {
  it('keeps parts without ":" or "%" byte-identical, so run("<scope>:<value>") names the same lock', () => {
    expect(composeLockKey('Rewards.claim', '42')).toBe('Rewards.claim:42');
    expect(composeLockKey('wallet', 'user-7@example.com')).toBe('wallet:user-7@example.com');
    const plain = 'no-colon';
    expect(escapeLockKeyPart(plain)).toBe(plain);
  });

  it('never maps two (scope, value) pairs to one key', () => {
    const pairs: [string, string][] = [
      ['A', 'B:C'],
      ['A:B', 'C'],
      ['A', 'B%3AC'],
      ['A%3AB', 'C'],
      ['A', '%'],
      ['A', '%25'],
      ['A:', 'B'],
      ['A', ':B'],
      ['', 'A:B'],
      ['A:B', ''],
    ];
    const keys = pairs.map(([scope, value]) => composeLockKey(scope, value));
    expect(new Set(keys).size).toBe(pairs.length);
    // And each key splits back at its only unescaped ':' into the pair it came from.
    for (const [i, key] of keys.entries()) {
      const [scope, value, ...rest] = key.split(':');
      expect(rest).toEqual([]);
      expect([decodeURIComponent(scope), decodeURIComponent(value)]).toEqual(pairs[i]);
    }
  });
});

describe('hasLoneSurrogate', () => {
  it('finds lone surrogates, and only them', () => {
    expect(['\ud800', '\udc00', 'a\udfffb', '\udc00\ud800'].map(hasLoneSurrogate)).toEqual([true, true, true, true]);
    expect(['\ufffd', '\ud83d\ude00', 'plain', ''].map(hasLoneSurrogate)).toEqual([false, false, false, false]);
  });
});

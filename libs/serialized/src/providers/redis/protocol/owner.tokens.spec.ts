import { OwnerTokens } from './owner.tokens';

describe('OwnerTokens', () => {
  it('issues unique tokens "<session>:<leaseMs>:<unique>" that the Lua scripts can parse', () => {
    const tokens = new OwnerTokens();
    const issued = Array.from({ length: 2000 }, (_, i) => tokens.next(1000 + (i % 3)));
    expect(new Set(issued).size).toBe(issued.length);
    for (const token of issued) {
      // The pattern common.lua matches: '^([^:]+):(%d+):'
      const match = /^([^:]+):(\d+):/.exec(token);
      expect(match?.[1]).toBe(tokens.session);
      expect([1000, 1001, 1002]).toContain(Number(match?.[2]));
      expect(token).not.toMatch(/\s/); // tokens travel in space-separated messages
    }
  });

  it('gives every provider its own random session', () => {
    const a = new OwnerTokens();
    const b = new OwnerTokens();
    expect(a.session).not.toBe(b.session);
    expect(a.session).not.toContain(':');
    expect(a.next(5).startsWith(`${b.session}:`)).toBe(false);
  });
});

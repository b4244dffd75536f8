import { SessionTokens } from './session.tokens';

describe('SessionTokens', () => {
  it('offers nothing before its first draw, nor with a block of one token', () => {
    const tokens = new SessionTokens();
    tokens.sized(1024);
    expect(tokens.offer()).toBeUndefined();
    expect(tokens.take()).toBeUndefined();
    const single = new SessionTokens();
    single.granted(5n);
    expect(single.offer()).toBeUndefined();
    expect(single.available).toBe(false);
  });

  it('offers and hands out the rest of the block after a draw, each token once, then nothing', () => {
    const tokens = new SessionTokens();
    tokens.sized(4);
    tokens.granted(1025n);
    expect(tokens.offer()).toEqual({ drawn: '1025', token: '1026' });
    expect(tokens.take()).toBe(1027n);
    tokens.granted(1026n); // the offer came back accepted: nothing changes
    expect(tokens.offer()).toEqual({ drawn: '1025', token: '1028' });
    expect(tokens.available).toBe(false);
    expect(tokens.take()).toBeUndefined();
  });

  it('starts the next block at a new draw, above every token handed out before', () => {
    const tokens = new SessionTokens();
    tokens.sized(1024);
    tokens.granted(1n);
    expect(tokens.take()).toBe(2n);
    tokens.granted(5121n); // another session drew in between: this grant drew again
    expect(tokens.offer()).toEqual({ drawn: '5121', token: '5122' });
    expect(tokens.take()).toBe(5123n);
  });
});

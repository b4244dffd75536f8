import { HandlerHandshake } from './handler.handshake';

describe('HandlerHandshake', () => {
  const handler = function create(): void {};
  const other = function list(): void {};

  it('is pending for the handler it names until claimed, and is claimed once', () => {
    const handshake = new HandlerHandshake(handler);
    expect(handshake.isPendingFor(other)).toBe(false);
    expect(handshake.isPendingFor(handler)).toBe(true);
    expect(handshake.claim(other)).toBe(false);
    expect(handshake.claim(handler)).toBe(true);
    // A second call of the same method (from inside the handler) is a direct call.
    expect(handshake.claim(handler)).toBe(false);
    expect(handshake.isPendingFor(handler)).toBe(false);
  });
});

import { InterceptedCall } from './intercepted.call';

describe('InterceptedCall', () => {
  const handler = function create(): void {};
  const other = function list(): void {};

  it('is pending for the handler it names until claimed, and is claimed once', () => {
    const interceptedCall = new InterceptedCall(handler);
    expect(interceptedCall.isPendingFor(other)).toBe(false);
    expect(interceptedCall.isPendingFor(handler)).toBe(true);
    expect(interceptedCall.claim(other)).toBe(false);
    expect(interceptedCall.claim(handler)).toBe(true);
    // A second call of the same method (from inside the handler) is a direct call.
    expect(interceptedCall.claim(handler)).toBe(false);
    expect(interceptedCall.isPendingFor(handler)).toBe(false);
  });
});

import type { SerializedMetadata } from '../metadata/serialized-options.interface';
import { parseSerializationKey } from '../key/serialization-key.parser';
import { planSerializedRoute, SerializedRoutePlans } from './serialized-route.plan';

const metadata = (scope: string | undefined, defaultScope: string): SerializedMetadata => ({
  key: 'id',
  parsedKey: parseSerializationKey('id', 'T#h'),
  options: scope === undefined ? {} : { scope },
  defaultScope,
});

describe('SerializedRoutePlan', () => {
  it('escapes the scope once, as composeLockKey does', () => {
    expect(planSerializedRoute(metadata('a:b%c', 'X'), 'T#h').scopePart).toBe('a%3Ab%25c');
    expect(planSerializedRoute(metadata(undefined, 'Users.claim'), 'Users#claim').scopePart).toBe('Users.claim');
  });

  it('keeps one plan per handler and class: an inherited method serves two controllers with their own plans', () => {
    const plans = new SerializedRoutePlans();
    const handler = (): void => undefined;
    class A {}
    class B {}
    const forA = planSerializedRoute(metadata(undefined, 'A'), 'A#h');
    plans.set(handler, A, forA);
    plans.set(handler, B, null);
    expect(plans.get(handler, A)).toBe(forA);
    expect(plans.get(handler, B)).toBeNull();
    expect(plans.get(handler, class C {})).toBeUndefined();
  });
});

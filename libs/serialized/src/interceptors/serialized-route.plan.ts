import { contextKeyResolver, type ContextKeyResolver } from '../key/context-key.resolver';
import { escapeLockKeyPart } from '../key/lock-key.composer';
import type { RunOptions } from '../lock.service';
import { runOptionsOf } from '../metadata/serialized-run-options.mapper';
import type { SerializedMetadata } from '../metadata/serialized-options.interface';

/**
 * What `SerializedInterceptor` needs to serialize one handler, worked out on its
 * first request and then reused: the metadata is fixed once the decorators ran, so
 * reading it, naming the handler, escaping the scope and preparing the key lookup
 * on every request would only repeat the same work.
 */
export interface SerializedRoutePlan {
  /** `Class#method`, named in errors and logs. */
  readonly handler: string;
  readonly resolveKey: ContextKeyResolver;
  /** The lock key's scope part, escaped (see `composeLockKey`): the key is `<scopePart>:<escaped value>`. */
  readonly scopePart: string;
  /** The options of every acquisition but the abort signal, which is per request. */
  readonly runOptions: Readonly<RunOptions>;
}

export function planSerializedRoute(metadata: SerializedMetadata, handler: string): SerializedRoutePlan {
  return {
    handler,
    resolveKey: contextKeyResolver(metadata.parsedKey, handler),
    scopePart: escapeLockKeyPart(metadata.options.scope ?? metadata.defaultScope),
    runOptions: runOptionsOf(metadata, handler),
  };
}

/**
 * Per handler, then per class (one method can serve several controllers through
 * inheritance): the plan, or `null` for a call that is not serialized.
 */
export class SerializedRoutePlans {
  private readonly byHandler = new WeakMap<object, WeakMap<object, SerializedRoutePlan | null>>();

  /** `undefined` when not planned yet. */
  get(handler: object, cls: object): SerializedRoutePlan | null | undefined {
    return this.byHandler.get(handler)?.get(cls);
  }

  set(handler: object, cls: object, plan: SerializedRoutePlan | null): void {
    let byClass = this.byHandler.get(handler);
    if (!byClass) this.byHandler.set(handler, (byClass = new WeakMap()));
    byClass.set(cls, plan);
  }
}

import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { SERIALIZED_LOCK_PARAMETER_METADATA, SERIALIZED_OPTIONS_METADATA, SKIP_SERIALIZED_METADATA } from '../serialized.constants';
import type { SerializedMetadata } from './serialized-options.interface';

/** Every Reflector read of `@Serialized`, `@SkipSerialized()` and `@SerializedLock()` goes through here. */
@Injectable()
export class SerializedMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /**
   * The handler's `@Serialized`, else its class's unless the handler is
   * `@SkipSerialized()`; `undefined` when the call is not serialized.
   */
  get(handler: object, cls: object): SerializedMetadata | undefined {
    const onHandler = this.reflector.get<SerializedMetadata | undefined>(SERIALIZED_OPTIONS_METADATA, handler as never);
    if (onHandler) return onHandler;
    if (this.reflector.get<boolean | undefined>(SKIP_SERIALIZED_METADATA, handler as never) === true) return undefined;
    return this.reflector.get<SerializedMetadata | undefined>(SERIALIZED_OPTIONS_METADATA, cls as never);
  }

  /** Whether a parameter of `handler` is `@SerializedLock()`. */
  takesLock(handler: object): boolean {
    return this.reflector.get<number | undefined>(SERIALIZED_LOCK_PARAMETER_METADATA, handler as never) !== undefined;
  }
}

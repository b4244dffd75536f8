import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { SerializedMetadata } from '../decorators/serialized-options.interface';
import { SERIALIZED_OPTIONS_METADATA } from '../serialized.constants';

/** Every Reflector read of the library goes through here. */
@Injectable()
export class SerializedMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The handler's `@Serialized`, else its class's; `undefined` when neither is decorated. */
  get(handler: object, cls: object): SerializedMetadata | undefined {
    return this.reflector.getAllAndOverride<SerializedMetadata | undefined>(SERIALIZED_OPTIONS_METADATA, [
      handler as never,
      cls as never,
    ]);
  }
}

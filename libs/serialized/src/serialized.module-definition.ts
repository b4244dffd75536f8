import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { SerializedModuleOptions } from './serialized-options.interface';

// The module name makes Nest's error name SERIALIZED_MODULE_OPTIONS, not an anonymous
// CONFIGURABLE_MODULE_OPTIONS[<uuid>], when a forRootAsync factory cannot be resolved.
export const {
  ConfigurableModuleClass: SerializedConfigurableModule,
  MODULE_OPTIONS_TOKEN: SERIALIZED_MODULE_OPTIONS,
  OPTIONS_TYPE: SERIALIZED_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: SERIALIZED_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<SerializedModuleOptions>({ moduleName: 'Serialized' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createSerializedOptions')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

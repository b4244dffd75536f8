import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { SerializedModuleOptions } from './serialized-options.interface';

// A module name, so DI errors say `SERIALIZED_MODULE_OPTIONS`, not a generated token.
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

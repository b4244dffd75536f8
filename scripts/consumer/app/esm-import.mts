/** Compiled in the `nodenext` configurations: the package imported from an ES module. */
import { InMemoryLockProvider, LockService, Serialized, SerializedModule } from 'nestjs-serialized';
import { SerializedTestingModule } from 'nestjs-serialized/testing';

export const fromEsm = [
  Serialized('userId'),
  SerializedModule.forRoot(),
  SerializedTestingModule.forRoot(),
  new LockService(new InMemoryLockProvider()),
];

/**
 * Apps in a process where `mysql2` cannot be resolved (test/mysql/workers/hide-mysql2.js):
 * reports over IPC how each start-up ended, and whether mysql2 was ever loaded.
 * Env: MYSQL_URL.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, MysqlLockProvider, SerializedModule } from 'nestjs-serialized';

@Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })] })
class MemoryApp {}

@Module({ imports: [SerializedModule.forRoot({ driver: 'mysql', mysql: { url: process.env.MYSQL_URL } })] })
class MysqlApp {}

@Module({ imports: [SerializedModule.forRoot()] })
class EnvApp {}

/** How `module` ended: `started, ran` (after one serialized call), or where it failed and why. */
async function startUp(module: new () => object): Promise<string> {
  let app;
  try {
    app = await NestFactory.createApplicationContext(module, { logger: false, abortOnError: false });
  } catch (error) {
    return `at start-up: ${(error as Error).name}: ${(error as Error).message}`;
  }
  try {
    return `started, ${await app.get(LockService).run('k', () => 'ran')}`;
  } catch (error) {
    return `at the first call: ${(error as Error).name}: ${(error as Error).message}`;
  } finally {
    await app.close();
  }
}

function resolvable(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const memory = await startUp(MemoryApp);
  const mysql = await startUp(MysqlApp);
  process.env.SERIALIZED_DRIVER = 'mysql';
  const env = await startUp(EnvApp);
  let constructed: string;
  try {
    new MysqlLockProvider({ url: process.env.MYSQL_URL });
    constructed = 'constructed';
  } catch (error) {
    constructed = `${(error as Error).name}: ${(error as Error).message}`;
  }
  const loaded = Object.keys(require.cache).some((file) => /node_modules\/mysql2\//.test(file));
  process.send?.({ type: 'report', resolvable: resolvable('mysql2'), memory, mysql, env, constructed, loaded });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { redactUrls } from '../internal/secrets.redact';
import { SERIALIZED_LOGGER_CONTEXT, SERIALIZED_OPTIONS } from '../serialized.constants';
import type { ResolvedSerializedOptions } from '../serialized-options.interface';

/**
 * Logs, once per app at start-up, which backend the locks live in: the driver,
 * its address with credentials redacted and the key prefix, e.g.
 * `driver=redis at redis://:***@cache:6379/0, key prefix "serialized"`.
 */
@Injectable()
export class SerializedStartupLine implements OnApplicationBootstrap {
  private readonly logger = new Logger(SERIALIZED_LOGGER_CONTEXT);

  constructor(@Inject(SERIALIZED_OPTIONS) private readonly options: ResolvedSerializedOptions) {}

  onApplicationBootstrap(): void {
    this.logger.log(describeBackend(this.options));
  }
}

/** The start-up line's text (without the logger's context). */
export function describeBackend(options: ResolvedSerializedOptions): string {
  // Built in code: its own settings, not the module's, say where it points.
  if (options.provider) return `provider ${options.provider.constructor.name} given in code (the app does not close it)`;
  switch (options.driver) {
    case 'memory':
      return 'driver=memory (locks in this process only)';
    case 'redis':
      return `driver=redis at ${redactUrls(redisAddress(options.redis))}, key prefix "${options.keyPrefix}"`;
    case 'postgres':
      return `driver=postgres at ${redactUrls(postgresAddress(options.postgres))}, key prefix "${options.keyPrefix}"`;
    case 'mysql':
      return `driver=mysql at ${redactUrls(mysqlAddress(options.mysql))}, key prefix "${options.keyPrefix}"`;
  }
}

interface RedisClientShape {
  isCluster?: boolean;
  startupNodes?: Array<string | number | { host?: string; port?: number }>;
  options?: {
    host?: string;
    port?: number;
    db?: number;
    path?: string;
    name?: string;
    sentinels?: Array<{ host?: string; port?: number }>;
  };
}

function redisAddress(redis: ResolvedSerializedOptions['redis']): string {
  if (redis.url) return redis.url;
  const client = redis.client as RedisClientShape | undefined;
  if (!client) return '(no address)';
  if (client.isCluster) {
    const nodes = (client.startupNodes ?? []).map((node) =>
      typeof node === 'object' ? `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}` : String(node),
    );
    return `a Redis Cluster (${nodes.join(', ')}; the app's client)`;
  }
  const options = client.options ?? {};
  if (options.sentinels?.length) {
    return `Sentinel master "${options.name}" via ${options.sentinels.map((s) => `${s.host}:${s.port}`).join(', ')} (the app's client)`;
  }
  if (options.path) return `redis+unix://${options.path} (the app's client)`;
  return `redis://${options.host ?? '127.0.0.1'}:${options.port ?? 6379}/${options.db ?? 0} (the app's client)`;
}

function postgresAddress(postgres: ResolvedSerializedOptions['postgres']): string {
  if (postgres.connectionString) return postgres.connectionString;
  const pool = postgres.pool as
    { options?: { connectionString?: string; host?: string; port?: number; database?: string; user?: string } } | undefined;
  const options = pool?.options;
  if (!options) return '(no address)';
  if (options.connectionString) return `${options.connectionString} (the app's pool)`;
  // The user goes outside the URL: a lone userinfo reads as a password to the redaction.
  const user = options.user ? `, user ${options.user}` : '';
  return `postgres://${options.host ?? 'localhost'}:${options.port ?? 5432}/${options.database ?? ''} (the app's pool${user})`;
}

function mysqlAddress(mysql: ResolvedSerializedOptions['mysql']): string {
  if (mysql.url) return mysql.url;
  const pool = mysql.pool as
    { config?: { connectionConfig?: MysqlConfigShape }; pool?: { config?: { connectionConfig?: MysqlConfigShape } } } | undefined;
  const config = pool?.config?.connectionConfig ?? pool?.pool?.config?.connectionConfig;
  if (!config) return '(no address)';
  // The user goes outside the URL: a lone userinfo reads as a password to the redaction.
  const user = config.user ? `, user ${config.user}` : '';
  return `mysql://${config.host ?? 'localhost'}:${config.port ?? 3306}/${config.database ?? ''} (the app's pool${user})`;
}

interface MysqlConfigShape {
  host?: string;
  port?: number;
  database?: string;
  user?: string;
}

import net from 'node:net';
import { TEST_DATABASE_URL, TEST_MYSQL_URL, TEST_REDIS_URL } from '../support/services';

const HOW_TO = {
  redis:
    'Redis 6.2+ must run for the Redis suites. Install it (Debian: apt-get install redis-server) and start it:\n' +
    '  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no\n' +
    'or point TEST_REDIS_URL at one. `.ci/run` starts it when it is installed but down.',
  postgres:
    'PostgreSQL must run for the PostgreSQL suites. Install it (Debian: apt-get install postgresql) and start it:\n' +
    '  pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n' +
    'or point TEST_DATABASE_URL at one (a role that may create tables). `.ci/run` starts it when it is installed but down.',
  mysql:
    'MariaDB 10.2+ (or MySQL 5.7.5+) must run for the MySQL suites, with a database `test`. Install it (Debian: apt-get install mariadb-server) and start it:\n' +
    '  service mariadb start && mysql -uroot -e "CREATE DATABASE IF NOT EXISTS test"\n' +
    'or point TEST_MYSQL_URL at one (a user that may create tables and KILL its own sessions). `.ci/run` starts it when it is installed but down.',
};

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname || '127.0.0.1', port: Number(port) || defaultPort });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Fails the whole run, saying what to install, when a service the suites need is missing. */
export async function checkServices(): Promise<void> {
  const [redis, postgres, mysql] = await Promise.all([
    reachable(TEST_REDIS_URL, 6379),
    reachable(TEST_DATABASE_URL, 5432),
    reachable(TEST_MYSQL_URL, 3306),
  ]);
  const problems: string[] = [];
  if (!redis) problems.push(`Redis is not reachable at ${TEST_REDIS_URL}.\n${HOW_TO.redis}`);
  if (!postgres) problems.push(`PostgreSQL is not reachable at ${TEST_DATABASE_URL}.\n${HOW_TO.postgres}`);
  if (!mysql) problems.push(`MySQL / MariaDB is not reachable at ${TEST_MYSQL_URL}.\n${HOW_TO.mysql}`);
  if (problems.length) throw new Error(`The test suites need real services; none is ever skipped.\n\n${problems.join('\n\n')}`);
}

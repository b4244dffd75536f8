/**
 * A passing `npm test` is quiet: every Nest log line of a test file (the library's
 * warnings about the outages the tests cause on purpose, Nest's own errors for the
 * failures they provoke) goes to a buffer, and is printed only when a test fails
 * (test/setup/quiet-environment.js tells which). A test that passes a logger of its
 * own to assert on what was logged keeps it.
 */
import { Logger, type LoggerService } from '@nestjs/common';
import { TestingLogger } from '@nestjs/testing/services/testing-logger.service';

type Level = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';

class BufferedLogger implements LoggerService {
  readonly lines: string[] = [];

  log(message: unknown, ...rest: unknown[]): void {
    this.add('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.add('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.add('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.add('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.add('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.add('fatal', message, rest);
  }

  private add(level: Level, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? `[${rest.pop() as string}] ` : '';
    const text =
      message instanceof Error ? (message.stack ?? message.message) : typeof message === 'string' ? message : JSON.stringify(message);
    const extra = rest.map((part) => (part instanceof Error ? (part.stack ?? part.message) : String(part))).join(' ');
    // A bound keeps a test that logs in a loop from growing the buffer without end.
    if (this.lines.length < 5000) this.lines.push(`${level.toUpperCase().padStart(7)} ${context}${text}${extra ? ` ${extra}` : ''}`);
  }
}

const buffered = new BufferedLogger();
const override = Logger.overrideLogger.bind(Logger);
// Nest's testing module installs a TestingLogger (it prints errors) on every compile, and
// apps pass `logger: false` or a list of levels: all of them become the buffer.
Logger.overrideLogger = (logger: LoggerService | Level[] | boolean) =>
  override(logger === false || logger === true || Array.isArray(logger) || logger instanceof TestingLogger ? buffered : logger);
override(buffered);

declare global {
  var __nestLogs: { flush(title: string): void; clear(): void } | undefined;
}

globalThis.__nestLogs = {
  flush(title: string): void {
    if (buffered.lines.length === 0) return;
    process.stderr.write(`\n── Nest log of ${title} (${buffered.lines.length} lines) ──\n${buffered.lines.join('\n')}\n── end of log ──\n`);
    buffered.lines.length = 0;
  },
  clear(): void {
    buffered.lines.length = 0;
  },
};

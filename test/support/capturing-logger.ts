import type { LoggerService } from '@nestjs/common';

/** Keeps every line an app logs, with its level and the context Nest passes last. */
export class CapturingLogger implements LoggerService {
  readonly lines: { level: string; text: string }[] = [];
  private add(level: string, message: unknown, rest: unknown[]): void {
    const parts = [message, ...rest].filter((part) => part !== undefined);
    this.lines.push({
      level,
      text: parts.map((part) => (part instanceof Error ? `${part.message}\n${part.stack}` : String(part))).join(' '),
    });
  }
  log(message: unknown, ...rest: unknown[]) {
    this.add('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.add('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.add('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.add('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.add('verbose', message, rest);
  }
  /** The lines of `level` (all levels when omitted) that contain `text`. */
  containing(text: string | RegExp, level?: string): string[] {
    return this.lines
      .filter((l) => level === undefined || l.level === level)
      .map((l) => l.text)
      .filter((t) => (typeof text === 'string' ? t.includes(text) : text.test(t)));
  }
}

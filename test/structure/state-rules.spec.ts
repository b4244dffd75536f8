import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the rules are a plain Node script's module
const { checkState } = require('../../scripts/structure/state-rules') as {
  checkState(
    lib: string,
    files: string[],
    exceptions: { fields: Record<string, string>; hosts: Record<string, string> },
  ): { problems: string[]; summary: string };
};

/**
 * The structure check's rules 5 and 6 (scripts/structure/state-rules.js) on a
 * small library of their own: each breakage fails, named; the clean shapes pass;
 * a listed exception that no longer applies fails too.
 */
function run(sources: Record<string, string>, exceptions = { fields: {}, hosts: {} }): string[] {
  const lib = mkdtempSync(path.join(tmpdir(), 'state-rules-'));
  try {
    const files = Object.entries(sources).map(([name, text]) => {
      const file = path.join(lib, name);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
      return file;
    });
    return checkState(lib, files, exceptions).problems;
  } finally {
    rmSync(lib, { recursive: true, force: true });
  }
}

const LIST = [
  'export class Node {',
  '  next: Node | undefined = undefined;',
  '}',
  '/** A list and its nodes in one file: the list is the one writer of the links. */',
  'export class List {',
  '  private first: Node | undefined;',
  '  push(node: Node): void {',
  '    node.next = this.first;',
  '    this.first = node;',
  '  }',
  '}',
  '',
].join('\n');

describe('scripts/structure/state-rules.js', () => {
  it('passes one writer per field: set in its constructor, changed by its own methods, or a node linked by its list in one file', () => {
    const clean = [
      'export class Clean {',
      '  private steps: number;',
      '  constructor() {',
      '    this.steps = 0;',
      '  }',
      '  step(): number {',
      '    return ++this.steps;',
      '  }',
      '}',
      '',
    ].join('\n');
    expect(run({ 'clean.ts': clean, 'list.ts': LIST })).toEqual([]);
  });

  it('fails on a field written outside its own file', () => {
    const problems = run({
      'list.ts': LIST,
      'elsewhere.ts': [
        "import type { Node } from './list';",
        'export function cut(node: Node): void {',
        '  node.next = undefined;',
        '}',
        '',
      ].join('\n'),
    });
    expect(problems).toEqual([
      expect.stringMatching(/^2 writers of list\.ts Node\.next: List in list\.ts .*the top level of elsewhere\.ts/),
      expect.stringContaining('list.ts Node.next is written outside its own file: the top level of elsewhere.ts'),
    ]);
  });

  it('fails on a field with two writers in its file', () => {
    const counter = [
      'export class Counter {',
      '  count = 0;',
      '  bump(): void {',
      '    this.count++;',
      '  }',
      '}',
      'export function reset(counter: Counter): void {',
      '  counter.count = 0;',
      '}',
      '',
    ].join('\n');
    const problems = run({ 'counter.ts': counter });
    expect(problems).toEqual([
      expect.stringMatching(/^2 writers of counter\.ts Counter\.count: Counter in counter\.ts .*the top level of counter\.ts/),
    ]);
  });

  it('fails on a host interface with one implementer unless its TSDoc says why', () => {
    const hosts = [
      'export interface Poker {',
      '  poke(): void;',
      '}',
      'export class OnlyPoker implements Poker {',
      '  poke(): void {}',
      '}',
      '/**',
      ' * Justified, the words wrapped as TSDoc wraps them: why an',
      ' * interface? The test says so.',
      ' */',
      'export interface Justified {',
      '  poke(): void;',
      '}',
      'export class OnlyJustified implements Justified {',
      '  poke(): void {}',
      '}',
      '',
    ].join('\n');
    expect(run({ 'hosts.ts': hosts })).toEqual([
      expect.stringContaining('host interface Poker in hosts.ts has one implementer (OnlyPoker)'),
    ]);
  });

  it('fails on a listed exception that no longer applies', () => {
    const problems = run({ 'list.ts': LIST }, { fields: { 'list.ts Node.next': 'someone' }, hosts: { 'list.ts Gone': 'someone' } });
    expect(problems).toEqual([
      expect.stringContaining('stale exception in FIELD_WRITER_EXCEPTIONS'),
      expect.stringContaining('stale exception in ONE_IMPLEMENTER_EXCEPTIONS'),
    ]);
  });
});

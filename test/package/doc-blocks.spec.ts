/** How scripts/consumer/doc-blocks.js finds the docs' TypeScript blocks (the consumer test compiles what it finds). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { blocksOf, importedPackages } = require('../../scripts/consumer/doc-blocks') as {
  blocksOf(
    file: string,
    markdown: string,
  ): { blocks: { line: number; code: string; fragment: boolean; reason?: string }[]; problems: string[] };
  importedPackages(code: string): string[];
};

describe('doc blocks', () => {
  it('finds ```ts blocks with the line of their first code line, indented and in blockquotes too', () => {
    const markdown = [
      '# t',
      '```ts',
      'const a = 1;',
      '```',
      '- item',
      '  ```ts',
      '  const b = 2;',
      '  ```',
      '> ```ts',
      '> const c = 3;',
      '> ```',
      '```bash',
      '```ts',
      '```',
    ].join('\n');
    const { blocks, problems } = blocksOf('x.md', markdown);
    expect(problems).toEqual([]);
    expect(blocks.map((b) => [b.line, b.code])).toEqual([
      [3, 'const a = 1;'],
      [7, 'const b = 2;'],
      [10, 'const c = 3;'],
    ]);
  });

  it('skips a fragment, which must give its reason; anything else after ```ts is refused', () => {
    const { blocks, problems } = blocksOf(
      'x.md',
      ['```ts fragment — a method of the class above', 'm() {}', '```', '```ts fragment', 'x', '```', '```ts oops', 'y', '```'].join('\n'),
    );
    expect(blocks.map((b) => [b.fragment, b.reason])).toEqual([
      [true, 'a method of the class above'],
      [true, ''],
      [false, undefined],
    ]);
    expect(problems).toEqual([
      'x.md:4: a ```ts fragment block says no reason beside it',
      'x.md:7: unknown words after ```ts: "oops" (only "fragment — <reason>")',
    ]);
  });

  it('reports a fence never closed', () => {
    expect(blocksOf('x.md', '```ts\nconst a = 1;\n').problems).toEqual(['x.md:1: a code fence that is never closed']);
  });

  it('names the packages a block imports', () => {
    const code =
      "import { A } from '@nestjs/common';\nimport type { B } from 'pg';\nimport request from 'supertest';\nimport { x } from './local';\nimport { y } from 'node:fs';\nimport { T } from 'nestjs-serialized/testing';";
    expect(importedPackages(code)).toEqual(['@nestjs/common', 'pg', 'supertest', 'nestjs-serialized']);
  });
});

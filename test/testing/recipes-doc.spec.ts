import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * docs/testing.md shows the recipes of recipes.spec.ts: every code block marked
 * `<!-- recipe: <name> -->` must be that file's `// #region <name>`, dedented.
 */
const ROOT = join(__dirname, '..', '..');
const doc = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');
const spec = readFileSync(join(__dirname, 'recipes.spec.ts'), 'utf8');

function regions(source: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of source.matchAll(/^[ \t]*\/\/ #region (\S+)\n([\s\S]*?)^[ \t]*\/\/ #endregion$/gm)) {
    found.set(match[1], dedent(match[2]));
  }
  return found;
}

function dedent(text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)![0].length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

function docBlocks(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of markdown.matchAll(/<!-- recipe: (\S+) -->\n```ts\n([\s\S]*?)\n```/g)) found.set(match[1], match[2]);
  return found;
}

describe('docs/testing.md', () => {
  const inSpec = regions(spec);
  const inDoc = docBlocks(doc);

  it('shows every recipe of recipes.spec.ts', () => {
    expect([...inDoc.keys()].sort()).toEqual([...inSpec.keys()].sort());
    expect(inSpec.size).toBeGreaterThanOrEqual(5);
  });

  it.each([...inSpec.keys()])('recipe %s is the tested code, character for character', (name) => {
    expect(inDoc.get(name)).toBe(inSpec.get(name));
  });
});

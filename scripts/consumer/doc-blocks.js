/**
 * The TypeScript code blocks of the user docs (README.md, the package's README,
 * docs/**\/*.md), as the consumer test compiles them. A block is fenced ```ts (or
 * ```typescript); one that cannot stand alone is fenced ```ts fragment, with the
 * reason on the fence line (```ts fragment — a method of the controller above),
 * and is not compiled.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** README.md, the package's README, then every Markdown file under docs/, in a stable order (paths relative to `root`). */
function docFiles(root) {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) found.push(rel);
    }
  };
  walk('docs');
  return ['README.md', 'libs/serialized/README.md', ...found.sort()];
}

const OPEN = /^( *)(`{3,}|~{3,})\s*([^\s`~]*)(.*)$/;
// A block may sit in a blockquote (`> ```ts`): its lines carry the same `>` prefix.
const QUOTE = /^(?: {0,3}> ?)*/;

/**
 * Every ```ts block of one Markdown text: `line` is the 1-based line of its first
 * code line, `code` its text without the fence's indentation (and blockquote
 * prefix). Blocks of other languages are skipped whole, so a ```ts inside a
 * ```markdown block is not one. `problems` lists fences the test must refuse (a
 * fragment without a reason, unknown words on the fence, a block never closed).
 */
function blocksOf(file, markdown) {
  const lines = markdown.split('\n');
  const blocks = [];
  const problems = [];
  for (let i = 0; i < lines.length; i++) {
    const quote = QUOTE.exec(lines[i])[0];
    const open = OPEN.exec(lines[i].slice(quote.length));
    if (!open) continue;
    const [, indent, fence, lang, rest] = open;
    const unquote = (line) => line.slice(QUOTE.exec(line)[0].length);
    const close = new RegExp(`^ *${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(unquote(lines[end]))) end++;
    if (end >= lines.length) {
      problems.push(`${file}:${i + 1}: a code fence that is never closed`);
      break;
    }
    if (lang === 'ts' || lang === 'typescript') {
      const info = rest.trim();
      const fragment = /^fragment\b/.test(info);
      const reason = fragment ? info.replace(/^fragment\b\s*[—–:-]*\s*/, '') : undefined;
      if (fragment && !reason) problems.push(`${file}:${i + 1}: a \`\`\`ts fragment block says no reason beside it`);
      if (!fragment && info) problems.push(`${file}:${i + 1}: unknown words after \`\`\`${lang}: "${info}" (only "fragment — <reason>")`);
      const code = lines
        .slice(i + 1, end)
        .map((l) => (quote ? unquote(l) : l))
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()))
        .join('\n');
      blocks.push({ file, line: i + 2, code, fragment, reason });
    }
    i = end;
  }
  return { blocks, problems };
}

/** The blocks and fence problems of every doc file under `root`. */
function docBlocks(root) {
  const blocks = [];
  const problems = [];
  for (const file of docFiles(root)) {
    const found = blocksOf(file, fs.readFileSync(path.join(root, file), 'utf8'));
    blocks.push(...found.blocks);
    problems.push(...found.problems);
  }
  return { blocks, problems };
}

/**
 * The named blocks of docs/testing.md: `<!-- recipe: <file> -->` before a ```ts
 * block (a whole spec file) and `<!-- jest-config: <name> -->` before a ```js block
 * (a jest.config.js). The consumer test runs every recipe under every config.
 */
function testingRecipes(root) {
  const markdown = fs.readFileSync(path.join(root, 'docs', 'testing.md'), 'utf8');
  const named = (marker, lang) =>
    [...markdown.matchAll(new RegExp(`<!-- ${marker}: (\\S+) -->\n\`\`\`${lang}\n([\\s\\S]*?)\n\`\`\`\n`, 'g'))].map((m) => ({
      name: m[1],
      code: `${m[2]}\n`,
    }));
  return { recipes: named('recipe', 'ts'), jestConfigs: named('jest-config', 'js') };
}

/** The packages a block imports (`@scope/name` or `name`; node: built-ins left out). */
function importedPackages(code) {
  const names = new Set();
  for (const match of code.matchAll(/\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"./][^'"]*)['"]/g)) {
    const spec = match[1];
    if (spec.startsWith('node:')) continue;
    names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
  }
  return [...names];
}

module.exports = { docFiles, blocksOf, docBlocks, importedPackages, testingRecipes };

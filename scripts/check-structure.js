#!/usr/bin/env node
/**
 * Structure rules of the library (issue 15), checked by `npm test` before jest:
 *
 * 1. No import cycle in libs/serialized/src. Every `import`/`export ... from`
 *    counts, type-only ones and re-exports included: a cycle of types is still a
 *    knot a newcomer has to untie in their head.
 * 2. No non-spec .ts file of the library over 300 lines.
 *
 * Known offenders owned by other work are listed below as exceptions. The lists
 * may only shrink: an exception that no longer applies fails the check too, so it
 * is removed by whoever fixes it.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const LIB = path.join(ROOT, 'libs', 'serialized', 'src');
const MAX_LINES = 300;

/** Files still over MAX_LINES (path relative to libs/serialized/src → owner of the split). */
const LONG_FILE_EXCEPTIONS = {
  // The session's claims and audit (issue 25) grew these past the line rule, which issue 22 replaces.
  'providers/postgres/lock-connection.ts': 'issue 22 (the line rule goes)',
  'providers/postgres/postgres-lock.provider.ts': 'issue 22 (the line rule goes)',
};

/**
 * Import edges ("from -> to", relative to libs/serialized/src) allowed to close a
 * cycle today, with who removes them. The check drops them and then demands a
 * graph without cycles.
 */
const CYCLE_EDGE_EXCEPTIONS = {};

/** Folder imports ("from -> to") allowed to close a cycle between folders today. */
const FOLDER_CYCLE_EXCEPTIONS = {
  // idempotency.interceptor.ts uses interceptors/client-gone.ts; serialized-error.mapper.ts maps idempotency problems.
  'idempotency -> interceptors': 'the owner of idempotency/ (e.g. client-gone.ts to internal/)',
  // postgres-idempotency.store.ts reads the provider's options; the provider builds the store.
  'idempotency/stores -> providers/postgres': 'the PostgreSQL helper',
  // The cohorts and riders still settle waiters themselves; once they only decide, they need no waiter class.
  'providers/redis/local-handoff -> providers/redis/waiting': 'issue 22 (local hand-off decides, waiting acts)',
};

function walk(dir, out = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const rel = (file) => path.relative(LIB, file).split(path.sep).join('/');
const isSpec = (file) => /\.spec\.ts$/.test(file);

function resolveImport(from, spec) {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts'), base]) {
    if (candidate.endsWith('.ts') && fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Every module specifier of a static import / export-from / import() / require() in `source`. */
function specifiers(source) {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]);
  return found;
}

function findCycles(graph) {
  // Tarjan's strongly connected components; every component of more than one
  // file (or a file importing itself) holds at least one cycle.
  let index = 0;
  const stack = [];
  const state = new Map();
  const components = [];
  const visit = (node) => {
    state.set(node, { index, low: index, onStack: true });
    index++;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!state.has(next)) {
        visit(next);
        state.get(node).low = Math.min(state.get(node).low, state.get(next).low);
      } else if (state.get(next).onStack) {
        state.get(node).low = Math.min(state.get(node).low, state.get(next).index);
      }
    }
    if (state.get(node).low === state.get(node).index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? new Set()).has(node)) components.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return components;
}

/** One concrete cycle inside a component, for the message. */
function cycleIn(graph, component) {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const cycle = [start];
        for (let at = node; at !== start; at = previous.get(at)) cycle.splice(1, 0, at);
        return [...cycle, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return component;
}

function main() {
  const files = walk(LIB);
  const problems = [];

  // 1. Import cycles.
  const graph = new Map();
  const edges = new Set();
  // Specs are never imported: they cannot be in a cycle, and their imports are no part of the layering.
  for (const file of files.filter((f) => !isSpec(f))) {
    const from = rel(file);
    const targets = new Set();
    for (const spec of specifiers(fs.readFileSync(file, 'utf8'))) {
      const target = resolveImport(file, spec);
      if (target) {
        targets.add(rel(target));
        edges.add(`${from} -> ${rel(target)}`);
      }
    }
    graph.set(from, targets);
  }
  for (const edge of Object.keys(CYCLE_EDGE_EXCEPTIONS)) {
    if (!edges.has(edge)) {
      problems.push(`stale exception in CYCLE_EDGE_EXCEPTIONS (the import is gone; remove it): ${edge}`);
      continue;
    }
    const [from, to] = edge.split(' -> ');
    graph.get(from).delete(to);
  }
  const cycles = findCycles(graph);
  for (const component of cycles) {
    problems.push(`import cycle: ${cycleIn(graph, component).join(' -> ')}${component.length > 2 ? `  (component: ${component.join(', ')})` : ''}`);
  }
  for (const [edge, owner] of Object.entries(CYCLE_EDGE_EXCEPTIONS)) {
    if (!edges.has(edge)) continue;
    const [from, to] = edge.split(' -> ');
    graph.get(from).add(to);
    const closes = findCycles(graph).some((component) => component.includes(from) && component.includes(to));
    graph.get(from).delete(to);
    if (!closes) problems.push(`stale exception in CYCLE_EDGE_EXCEPTIONS (no longer closes a cycle; remove it): ${edge} (${owner})`);
  }

  // 1b. Cycles between folders (root files aside: they compose the folders).
  const folderOf = (file) => path.posix.dirname(file);
  const folders = new Map();
  const folderEdges = new Map();
  for (const edge of edges) {
    const [from, to] = edge.split(' -> ');
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b || a === '.' || b === '.') continue;
    if (!folders.has(a)) folders.set(a, new Set());
    if (!folders.has(b)) folders.set(b, new Set());
    const key = `${a} -> ${b}`;
    if (!folderEdges.has(key)) folderEdges.set(key, []);
    folderEdges.get(key).push(edge);
    if (!(Object.keys(FOLDER_CYCLE_EXCEPTIONS).includes(key))) folders.get(a).add(b);
  }
  for (const component of findCycles(folders)) {
    const cycle = cycleIn(folders, component);
    const via = [];
    for (let i = 0; i + 1 < cycle.length; i++) via.push(...folderEdges.get(`${cycle[i]} -> ${cycle[i + 1]}`).slice(0, 2));
    problems.push(`folder cycle: ${cycle.join(' -> ')}  (via ${via.join('; ')})`);
  }
  for (const [key, owner] of Object.entries(FOLDER_CYCLE_EXCEPTIONS)) {
    const [a, b] = key.split(' -> ');
    if (!folderEdges.has(key)) {
      problems.push(`stale exception in FOLDER_CYCLE_EXCEPTIONS (no such import any more; remove it): ${key} (${owner})`);
      continue;
    }
    folders.get(a).add(b);
    const closes = findCycles(folders).some((component) => component.includes(a) && component.includes(b));
    folders.get(a).delete(b);
    if (!closes) problems.push(`stale exception in FOLDER_CYCLE_EXCEPTIONS (no longer closes a cycle; remove it): ${key} (${owner})`);
  }

  // 2. File length.
  const lengths = files
    .filter((file) => !isSpec(file))
    .map((file) => ({ file: rel(file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }));
  for (const { file, lines } of lengths) {
    if (lines > MAX_LINES && !(file in LONG_FILE_EXCEPTIONS)) problems.push(`file over ${MAX_LINES} lines: ${file} (${lines})`);
  }
  for (const [file, owner] of Object.entries(LONG_FILE_EXCEPTIONS)) {
    const entry = lengths.find((l) => l.file === file);
    if (!entry || entry.lines <= MAX_LINES) problems.push(`stale exception in LONG_FILE_EXCEPTIONS (now ${entry ? entry.lines : 'gone'}; remove it): ${file} (${owner})`);
  }

  if (process.argv.includes('--report')) {
    const top = [...lengths].sort((a, b) => b.lines - a.lines).slice(0, 5);
    console.log('largest library files:');
    for (const { file, lines } of top) console.log(`  ${String(lines).padStart(5)}  ${file}`);
    const allFolders = new Map([...folders].map(([node, targets]) => [node, new Set(targets)]));
    for (const key of Object.keys(FOLDER_CYCLE_EXCEPTIONS)) {
      const [a, b] = key.split(' -> ');
      if (allFolders.has(a)) allFolders.get(a).add(b);
    }
    const fileCycles = findCycles(withAll(graph, edges));
    const folderCycles = findCycles(allFolders);
    console.log(`file import cycles (exceptions included): ${fileCycles.length}${fileCycles.map((c) => `\n  ${c.join(' <-> ')}`).join('')}`);
    console.log(`folder cycles (exceptions included): ${folderCycles.length}${folderCycles.map((c) => `\n  ${c.join(' <-> ')}`).join('')}`);
  }
  if (problems.length) {
    console.error(`check-structure: ${problems.length} problem(s) in libs/serialized/src:`);
    for (const problem of problems) console.error(`  - ${problem}`);
    process.exit(1);
  }
  const listed = [LONG_FILE_EXCEPTIONS, CYCLE_EDGE_EXCEPTIONS, FOLDER_CYCLE_EXCEPTIONS].reduce((n, list) => n + Object.keys(list).length, 0);
  console.log(`check-structure: ${files.length} files, no import cycles, none over ${MAX_LINES} lines (${listed} listed exceptions)`);
}

function withAll(graph, edges) {
  const full = new Map([...graph].map(([node, targets]) => [node, new Set(targets)]));
  for (const edge of edges) {
    const [from, to] = edge.split(' -> ');
    full.get(from).add(to);
  }
  return full;
}

main();

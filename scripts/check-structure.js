#!/usr/bin/env node
/**
 * Structure rules of the library, checked by `npm test` before jest:
 *
 * 1. No import cycle in libs/serialized/src. Every `import`/`export ... from`
 *    counts, type-only ones and re-exports included: a cycle of types is still a
 *    knot a newcomer has to untie in their head.
 * 2. One writer of a Redis waiter's state: its phase, grant, fence and
 *    rider membership (and the other fields in WAITER_STATE) are assigned only in
 *    WAITER_STATE_OWNER, whose methods are the transitions of models/VOCABULARY.md.
 *    An assignment `.<field> =` (or `++`, `--`, `??=` ...) anywhere else in the
 *    Redis provider fails.
 * 3. No new host (callback) interface in the Redis provider: every interface with
 *    a method there is listed in HOST_INTERFACES with why it is one (a host is
 *    called back by what it made; at most MAX_HOSTS of them), or in PORTS (an
 *    interface with methods that calls nothing back: options, a gateway's port).
 * 4. Every source file is named `<thing>.<role>.ts` (`lock.service.ts`,
 *    `lock-key.composer.ts`): lower-case words joined by `-`, one `.` between what
 *    it is about and the role it plays, so a newcomer can guess what a file holds
 *    from its name. Specs follow their source (`<source>.spec.ts`, or
 *    `<source>.<topic>.spec.ts`); `index.ts` is a folder's table of contents.
 * 5. One writer per piece of state, in every class of the library: a mutable
 *    field is assigned by one class (or the top level of one file), in the file
 *    that declares it; other code calls its class's named transitions.
 * 6. A host (callback) interface with one implementer is gone, or its TSDoc says
 *    why it is one ("Why an interface").
 *    Rules 5 and 6 read the library through the TypeScript compiler:
 *    scripts/structure/state-rules.js.
 *
 * A file is as long as its one responsibility needs: there is no line rule.
 * Known offenders owned by other work are listed below as exceptions. The lists
 * may only shrink: an exception that no longer applies fails the check too, so it
 * is removed by whoever fixes it.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { checkState } = require('./structure/state-rules');

const ROOT = path.resolve(__dirname, '..');
const LIB = path.join(ROOT, 'libs', 'serialized', 'src');
const REDIS = 'providers/redis/';

/** The one file that assigns a Redis waiter's state (its transitions). */
const WAITER_STATE_OWNER = 'providers/redis/waiting/redis.waiter.ts';
/** The waiter's fields that only its transitions change. */
const WAITER_STATE = ['phase', 'fence', 'handed', 'anchor', 'following', 'followers', 'notice', 'heardBehind'];

/** Host interfaces of the Redis provider (file → interface → why it is one). */
const MAX_HOSTS = 1;
const HOST_INTERFACES = {
  'providers/redis/waiting/redis.wake-ups.ts': {
    WakeUpListener: "the subscriber's messages come when Redis sends them, not as the reply to a command: they can only be handed on",
  },
};
/** Interfaces with methods that call nothing back (file → interface → what it is). */
const PORTS = {
  'providers/redis/protocol/hand-off.reply.ts': { RunnableScript: 'what a script gateway runs (a loaded LuaScript)' },
  'providers/redis/transport/redis.connection.ts': {
    RedisConnectionOptions: "the connection's options (slotOf: a pure function of the key)",
  },
  'providers/redis/transport/redis.call.ts': {
    RedisCallOptions: "a call's options (skip(): asked once, just before sending)",
    Call: 'one call on its way: its promise is settled through resolve/reject',
  },
  'providers/redis/transport/redis-readiness.gate.ts': { ReadyWaiter: 'a caller waiting for a ready connection: its promise' },
};
/** Host interfaces still to go, with who removes them (none). */
const HOST_EXCEPTIONS = {};

/**
 * Fields written by a second class or outside their own file today ("file
 * Class.field" → who gives them one writer). The list may only shrink.
 */
const FIELD_WRITER_EXCEPTIONS = {};

/** Interfaces with one implementer and no "Why an interface" today ("file Interface" → who settles them). */
const ONE_IMPLEMENTER_EXCEPTIONS = {};

/**
 * Import edges ("from -> to", relative to libs/serialized/src) allowed to close a
 * cycle today, with who removes them. The check drops them and then demands a
 * graph without cycles.
 */
const CYCLE_EDGE_EXCEPTIONS = {};

/** Folder imports ("from -> to") allowed to close a cycle between folders today. */
const FOLDER_CYCLE_EXCEPTIONS = {
  // idempotency.interceptor.ts uses interceptors/client-gone.watch.ts; serialized-error.mapper.ts maps idempotency problems.
  'idempotency -> interceptors': 'the owner of idempotency/ (e.g. client-gone.watch.ts to internal/)',
  // postgres-idempotency.store.ts reads the provider's options; the provider builds the store.
  'idempotency/stores -> providers/postgres': 'the PostgreSQL helper',
};

/** A source file's name: `<thing>.<role>.ts`. */
const FILE_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z]+(?:-[a-z]+)*\.ts$/;
function walk(dir, out = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

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

/**
 * Runs the rules on the library at `lib` (another copy of it in
 * test/structure/check-structure.spec.ts, which checks the checks in its own process).
 * `rules: 'imports'` runs rules 1-4 alone (rules 5 and 6 have test/structure/state-rules.spec.ts).
 * @returns {{ problems: string[], summary: string, report: string[] }}
 */
function checkStructure(lib = LIB, { rules = 'all' } = {}) {
  const rel = (file) => path.relative(lib, file).split(path.sep).join('/');
  const files = walk(lib);
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
    problems.push(
      `import cycle: ${cycleIn(graph, component).join(' -> ')}${component.length > 2 ? `  (component: ${component.join(', ')})` : ''}`,
    );
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
    if (!Object.keys(FOLDER_CYCLE_EXCEPTIONS).includes(key)) folders.get(a).add(b);
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

  // 2. One writer of waiter state.
  const assignment = new RegExp(`\\.(${WAITER_STATE.join('|')})\\s*(?:=(?!=)|\\+\\+|--|[-+*/|&]=|\\?\\?=|\\|\\|=|&&=)`);
  const stripped = (source) => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  let waiterStateWriters = 0;
  for (const file of files.filter((f) => !isSpec(f) && rel(f).startsWith(REDIS))) {
    const name = rel(file);
    const lines = stripped(fs.readFileSync(file, 'utf8')).split('\n');
    const writes = lines.map((line, i) => [line, i + 1]).filter(([line]) => assignment.test(line));
    if (writes.length) waiterStateWriters++;
    if (name === WAITER_STATE_OWNER) continue;
    for (const [line, at] of writes) problems.push(`waiter state assigned outside ${WAITER_STATE_OWNER}: ${name}:${at}: ${line.trim()}`);
  }
  if (!fs.existsSync(path.join(lib, WAITER_STATE_OWNER)))
    problems.push(`the owner of waiter state is gone: ${WAITER_STATE_OWNER} (update WAITER_STATE_OWNER)`);

  // 3. Host interfaces of the Redis provider.
  const listed = (lists, file, name) => lists.some((list) => list[file] && name in list[file]);
  const found = new Set();
  for (const file of files.filter((f) => !isSpec(f) && rel(f).startsWith(REDIS))) {
    const name = rel(file);
    const source = stripped(fs.readFileSync(file, 'utf8'));
    for (const match of source.matchAll(/\binterface\s+(\w+)[^{]*\{/g)) {
      let depth = 1;
      let i = match.index + match[0].length;
      while (depth && i < source.length) depth += { '{': 1, '}': -1 }[source[i++]] ?? 0;
      const body = source.slice(match.index + match[0].length, i - 1);
      if (!/^\s*(?:readonly\s+)?\w+\??\s*(?:<[^>]*>)?\(/m.test(body) && !/:\s*\([^)]*\)\s*=>/.test(body)) continue;
      found.add(`${name} ${match[1]}`);
      if (!listed([HOST_INTERFACES, PORTS, HOST_EXCEPTIONS], name, match[1])) {
        problems.push(
          `new host interface ${match[1]} in ${name}: list it in HOST_INTERFACES (at most ${MAX_HOSTS}, with why) or PORTS (if it calls nothing back)`,
        );
      }
    }
  }
  for (const list of [HOST_INTERFACES, PORTS, HOST_EXCEPTIONS]) {
    for (const [file, names] of Object.entries(list)) {
      for (const name of Object.keys(names))
        if (!found.has(`${file} ${name}`))
          problems.push(`stale entry (no such interface with methods any more; remove it): ${file} ${name}`);
    }
  }
  const hosts = Object.values(HOST_INTERFACES).reduce((n, names) => n + Object.keys(names).length, 0);
  if (hosts > MAX_HOSTS) problems.push(`${hosts} host interfaces in the Redis provider, at most ${MAX_HOSTS}`);

  // 4. File names (no exceptions: every source file follows the rule).
  const offRule = files
    .map(rel)
    .filter((name) => !isSpec(name) && path.posix.basename(name) !== 'index.ts' && !FILE_NAME.test(path.posix.basename(name)));
  for (const name of offRule) {
    problems.push(`file name off the <thing>.<role>.ts rule: ${name} (e.g. lock-key.composer.ts, lock.service.ts)`);
  }

  // 5, 6. One writer per field; one-implementer interfaces justified.
  const state =
    rules === 'imports'
      ? { problems: [], summary: 'state rules not run' }
      : checkState(
          lib,
          files.filter((f) => !isSpec(f)),
          { fields: FIELD_WRITER_EXCEPTIONS, hosts: ONE_IMPLEMENTER_EXCEPTIONS },
        );
  problems.push(...state.problems);

  // What `--report` prints: the counts, and the cycles the exceptions close.
  const report = [];
  report.push(`state: ${state.summary}`);
  report.push(
    `Redis provider: ${hosts} host interfaces (+${Object.values(HOST_EXCEPTIONS).reduce((n, names) => n + Object.keys(names).length, 0)} listed exceptions), ${waiterStateWriters} file(s) writing waiter state`,
  );
  const allFolders = new Map([...folders].map(([node, targets]) => [node, new Set(targets)]));
  for (const key of Object.keys(FOLDER_CYCLE_EXCEPTIONS)) {
    const [a, b] = key.split(' -> ');
    if (allFolders.has(a)) allFolders.get(a).add(b);
  }
  const fileCycles = findCycles(withAll(graph, edges));
  const folderCycles = findCycles(allFolders);
  report.push(`file import cycles (exceptions included): ${fileCycles.length}${fileCycles.map((c) => `\n  ${c.join(' <-> ')}`).join('')}`);
  report.push(`folder cycles (exceptions included): ${folderCycles.length}${folderCycles.map((c) => `\n  ${c.join(' <-> ')}`).join('')}`);
  const exceptions =
    [CYCLE_EDGE_EXCEPTIONS, FOLDER_CYCLE_EXCEPTIONS].reduce((n, list) => n + Object.keys(list).length, 0) +
    Object.values(HOST_EXCEPTIONS).reduce((n, names) => n + Object.keys(names).length, 0);
  const summary = `check-structure: ${files.length} files, no import cycles, waiter state written only in ${WAITER_STATE_OWNER}, ${hosts} Redis host interfaces, every file named <thing>.<role>.ts, ${exceptions} listed exceptions; ${state.summary}`;
  return { problems, summary, report };
}

function withAll(graph, edges) {
  const full = new Map([...graph].map(([node, targets]) => [node, new Set(targets)]));
  for (const edge of edges) {
    const [from, to] = edge.split(' -> ');
    full.get(from).add(to);
  }
  return full;
}

function main() {
  const { problems, summary, report } = checkStructure();
  if (process.argv.includes('--report')) for (const line of report) console.log(line);
  if (problems.length) {
    console.error(`check-structure: ${problems.length} problem(s) in libs/serialized/src:`);
    for (const problem of problems) console.error(`  - ${problem}`);
    process.exit(1);
  }
  console.log(summary);
}

module.exports = { checkStructure };

if (require.main === module) main();

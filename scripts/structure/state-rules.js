'use strict';
/**
 * The structure rules that need types (scripts/check-structure.js runs them):
 *
 * - One writer per piece of state. Every mutable field of every class (and every
 *   mutable member of an interface) in the library has one writer: the one class
 *   whose code assigns it (`=`, `+=`, `??=`, `++`, `delete` ...), or the top level
 *   of one file; and a class's field is assigned only in the file that declares
 *   it (other code calls the class's named transitions). Setting a field in its
 *   own class's constructor is its initialisation, not a write. A node and the
 *   list that links it may share a file (`DeadlineLine` and `DeadlineQueue`): the
 *   list is then the one writer of the links.
 * - A host (callback) interface with one implementer says why it is one: an
 *   interface with a method that exactly one class `implements` carries the words
 *   "Why an interface" (or "One implementer") in its TSDoc, or is gone.
 *
 * Both rules read the library through the TypeScript compiler (a few seconds).
 */
const path = require('node:path');
const ts = require('typescript');

const ASSIGNMENTS = new Set([
  ts.SyntaxKind.EqualsToken,
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.MinusEqualsToken,
  ts.SyntaxKind.AsteriskEqualsToken,
  ts.SyntaxKind.SlashEqualsToken,
  ts.SyntaxKind.PercentEqualsToken,
  ts.SyntaxKind.AmpersandEqualsToken,
  ts.SyntaxKind.BarEqualsToken,
  ts.SyntaxKind.CaretEqualsToken,
  ts.SyntaxKind.LessThanLessThanEqualsToken,
  ts.SyntaxKind.GreaterThanGreaterThanEqualsToken,
  ts.SyntaxKind.GreaterThanGreaterThanGreaterThanEqualsToken,
  ts.SyntaxKind.AsteriskAsteriskEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
]);

/** The expression a node writes to, if it is a write. */
function writtenBy(node) {
  if (ts.isBinaryExpression(node) && ASSIGNMENTS.has(node.operatorToken.kind)) return node.left;
  if (
    (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) &&
    (node.operator === ts.SyntaxKind.PlusPlusToken || node.operator === ts.SyntaxKind.MinusMinusToken)
  )
    return node.operand;
  if (ts.isDeleteExpression(node)) return node.expression;
  return undefined;
}

/** `a.b.c = …` writes `c`; `(a.b)! = …` too. Destructuring targets are not fields of a class. */
function propertyTarget(expression) {
  let target = expression;
  while (ts.isNonNullExpression(target) || ts.isParenthesizedExpression(target)) target = target.expression;
  return ts.isPropertyAccessExpression(target) ? target : undefined;
}

const isMutable = (declaration) => !(ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Readonly);
const isStatic = (declaration) => Boolean(ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Static);

/** The declaration a field belongs to: its class or interface. */
function ownerOf(declaration) {
  if (ts.isParameter(declaration)) return declaration.parent.parent;
  return declaration.parent;
}

/** Who writes at `node`: the innermost enclosing class, else the top level of the file. */
function writerAt(node, rel) {
  for (let at = node.parent; at; at = at.parent) {
    if (ts.isClassDeclaration(at) || ts.isClassExpression(at)) return { id: at, label: `${at.name ? at.name.text : '(class)'} in ${rel}` };
  }
  return { id: node.getSourceFile(), label: `the top level of ${rel}` };
}

/** Whether `node` is inside the constructor of `owner` (initialisation). */
function inConstructorOf(node, owner) {
  for (let at = node.parent; at; at = at.parent) {
    if (ts.isConstructorDeclaration(at)) return at.parent === owner;
    if (ts.isClassDeclaration(at) || ts.isClassExpression(at)) return false;
  }
  return false;
}

function docOf(node) {
  return ts
    .getJSDocCommentsAndTags(node)
    .map((doc) => doc.getText())
    .join('\n')
    .replace(/\s*\n\s*\*?\s*/g, ' ');
}

const OPTIONS = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  // ECMAScript's declarations without the DOM's (lib.dom.d.ts is most of the default's size):
  // the rules read the library's classes, and no DOM type is one of them.
  lib: ['lib.es2022.d.ts'],
  strict: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
  // Only the library's own files: the rules read its classes and interfaces, never a package's
  // types, and loading @nestjs/*, ioredis and pg declarations was most of the check's time.
  noResolve: true,
};

/** TypeScript's lib.*.d.ts, parsed once per process and shared by every program built here. */
const libSources = new Map();

/**
 * A compiler host that reads TypeScript's own declarations from `libSources`: a
 * process that builds several programs (the specs of these rules, test/structure/)
 * parses them once instead of once per program. The library's files are read
 * afresh every time, since they are what changes.
 */
function compilerHost() {
  const host = ts.createCompilerHost(OPTIONS, true);
  const libFolder = path.dirname(ts.getDefaultLibFilePath(OPTIONS));
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (path.dirname(fileName) !== libFolder) return read(fileName, languageVersion, onError, shouldCreate);
    if (!libSources.has(fileName)) libSources.set(fileName, read(fileName, languageVersion, onError, shouldCreate));
    return libSources.get(fileName);
  };
  return host;
}

/**
 * @param lib the library's source folder
 * @param files its .ts files (specs excluded)
 * @returns {{ writers: Map<string, {field: string, writers: Map<unknown, {label: string, at: string}>}>, hosts: Array<{file: string, name: string, implementers: string[], justified: boolean}>, fields: number }}
 */
function readState(lib, files) {
  const program = ts.createProgram(files, OPTIONS, compilerHost());
  const checker = program.getTypeChecker();
  const inLib = (sourceFile) => !path.relative(lib, sourceFile.fileName).startsWith('..');
  const relOf = (sourceFile) => path.relative(lib, sourceFile.fileName).split(path.sep).join('/');
  const sources = program.getSourceFiles().filter((sourceFile) => inLib(sourceFile) && !sourceFile.isDeclarationFile);

  /** field id ("file Owner.name") → its writers */
  const writers = new Map();
  /** field id → writes from outside its own class */
  const foreign = new Map();
  let fields = 0;
  const hosts = new Map();
  for (const sourceFile of sources) {
    const visit = (node) => {
      if ((ts.isPropertyDeclaration(node) || ts.isPropertySignature(node)) && isMutable(node) && !isStatic(node)) fields++;
      if (
        ts.isInterfaceDeclaration(node) &&
        node.members.some((m) => ts.isMethodSignature(m) || (ts.isPropertySignature(m) && m.type && ts.isFunctionTypeNode(m.type)))
      ) {
        hosts.set(checker.getSymbolAtLocation(node.name), {
          file: relOf(sourceFile),
          name: node.name.text,
          implementers: [],
          justified: /why an interface|one implementer/i.test(docOf(node)),
        });
      }
      const target = writtenBy(node) && propertyTarget(writtenBy(node));
      if (target) {
        const symbol = checker.getSymbolAtLocation(target.name);
        const declaration = symbol && symbol.valueDeclaration;
        if (
          declaration &&
          inLib(declaration.getSourceFile()) &&
          (ts.isPropertyDeclaration(declaration) ||
            ts.isPropertySignature(declaration) ||
            (ts.isParameter(declaration) && ts.isConstructorDeclaration(declaration.parent))) &&
          isMutable(declaration) &&
          !isStatic(declaration)
        ) {
          const owner = ownerOf(declaration);
          if (!inConstructorOf(node, owner)) {
            const id = `${relOf(declaration.getSourceFile())} ${owner.name ? owner.name.text : '(anonymous)'}.${target.name.text}`;
            if (!writers.has(id)) writers.set(id, new Map());
            const writer = writerAt(node, relOf(sourceFile));
            const line = sourceFile.getLineAndCharacterOfPosition(node.getStart()).line + 1;
            if (!writers.get(id).has(writer.id))
              writers.get(id).set(writer.id, { label: writer.label, at: `${relOf(sourceFile)}:${line}` });
            if (ts.isClassLike(owner) && sourceFile !== declaration.getSourceFile()) {
              if (!foreign.has(id)) foreign.set(id, []);
              foreign.get(id).push(`${writer.label} (${relOf(sourceFile)}:${line})`);
            }
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
  }
  for (const sourceFile of sources) {
    const visit = (node) => {
      if (ts.isClassDeclaration(node)) {
        for (const clause of node.heritageClauses || []) {
          if (clause.token !== ts.SyntaxKind.ImplementsKeyword) continue;
          for (const type of clause.types) {
            let symbol = checker.getSymbolAtLocation(type.expression);
            if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
            const host = hosts.get(symbol);
            if (host) host.implementers.push(node.name ? node.name.text : '(anonymous)');
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
  }
  return { writers, foreign, hosts: [...hosts.values()], fields };
}

/**
 * @param exceptions.fields "file Owner.field" → who removes the second writer
 * @param exceptions.hosts "file Interface" → who removes or justifies it
 * @returns {{ problems: string[], summary: string }}
 */
function checkState(lib, files, exceptions) {
  const problems = [];
  const { writers, foreign, hosts, fields } = readState(lib, files);
  const broken = new Set();
  for (const [id, byWriter] of writers) {
    if (byWriter.size < 2) continue;
    broken.add(id);
    if (id in exceptions.fields) continue;
    const places = [...byWriter.values()].map((w) => `${w.label} (${w.at})`).join('; ');
    problems.push(`${byWriter.size} writers of ${id}: ${places} — give it one owner that the others ask (a named transition)`);
  }
  for (const [id, places] of foreign) {
    broken.add(id);
    if (id in exceptions.fields) continue;
    problems.push(`${id} is written outside its own file: ${places.join('; ')} — make it private and give its class a named transition`);
  }
  for (const [id, owner] of Object.entries(exceptions.fields)) {
    if (!broken.has(id))
      problems.push(`stale exception in FIELD_WRITER_EXCEPTIONS (one writer in its own file now; remove it): ${id} (${owner})`);
  }
  let unjustified = 0;
  for (const host of hosts) {
    if (host.implementers.length !== 1 || host.justified) continue;
    unjustified++;
    if (`${host.file} ${host.name}` in exceptions.hosts) continue;
    problems.push(
      `host interface ${host.name} in ${host.file} has one implementer (${host.implementers[0]}): remove it, or say "Why an interface" in its TSDoc`,
    );
  }
  for (const [id, owner] of Object.entries(exceptions.hosts)) {
    const host = hosts.find((h) => `${h.file} ${h.name}` === id);
    if (!host || host.implementers.length !== 1 || host.justified)
      problems.push(`stale exception in ONE_IMPLEMENTER_EXCEPTIONS (gone or justified now; remove it): ${id} (${owner})`);
  }
  const summary = `${fields} mutable fields, ${broken.size} written by more than one class or outside their own file (${Object.keys(exceptions.fields).length} listed exceptions), ${unjustified} unexplained one-implementer interfaces (${Object.keys(exceptions.hosts).length} listed)`;
  return { problems, summary };
}

module.exports = { checkState, readState };

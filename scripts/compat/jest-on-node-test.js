/**
 * The jest globals our suites use, on top of node:test.
 *
 * Why: NestJS 12 ships ES modules only. Node 20.19+ loads them from CommonJS
 * (require(esm)), but jest's own module system does not on Node 20, so under
 * NestJS 12 the suites run on node:test with this shim instead. Only what the
 * suites call is provided; a spec that needs more (fake timers, isolated module
 * registries) is listed in nest-compat.js and left to the jest run.
 */
const t = require('node:test');
const { expect } = require('expect');
const mock = require('jest-mock');

const DEFAULT_TIMEOUT_MS = 60_000;

function title(template, args) {
  let i = 0;
  return template.replace(/%[sdpij]/g, () => String(args[i++]));
}

function each(register) {
  return (table) => (template, body, timeout) => {
    for (const row of table) {
      const args = Array.isArray(row) ? row : [row];
      register(title(template, args), () => body(...args), timeout);
    }
  };
}

function test(name, body, timeout) {
  // A jest test that takes a `done` callback ends when done is called.
  const run = body.length > 0 ? (_context, done) => body(done) : () => body();
  return t.it(name, { timeout: timeout ?? DEFAULT_TIMEOUT_MS }, run);
}
test.each = each(test);

const hook = (register) => (fn, timeout) => register(fn, { timeout: timeout ?? DEFAULT_TIMEOUT_MS });

global.describe = (name, body) => t.describe(name, body);
global.describe.each = each((name, body) => t.describe(name, body));
global.it = test;
global.test = test;
global.beforeAll = hook(t.before);
global.afterAll = hook(t.after);
global.beforeEach = hook(t.beforeEach);
global.afterEach = hook(t.afterEach);
global.expect = expect;
global.jest = { fn: mock.fn, spyOn: mock.spyOn, setTimeout() {} };

/**
 * docs/testing.md's recipes are whole spec files that npm test runs as a user runs
 * them (test/package/consumer.alone-spec.ts: the packed package in a fresh app, each
 * recipe under each jest.config.js the doc shows). This checks what the doc must
 * offer for that: a jest config for ts-jest and one for @swc/jest, and recipes that
 * are complete files importing what they use.
 */
import { join } from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { testingRecipes } = require('../../scripts/consumer/doc-blocks') as {
  testingRecipes(root: string): { recipes: { name: string; code: string }[]; jestConfigs: { name: string; code: string }[] };
};

const { recipes, jestConfigs } = testingRecipes(join(__dirname, '..', '..'));

describe('docs/testing.md', () => {
  it('shows a jest config for ts-jest and one for @swc/jest', () => {
    expect(jestConfigs.map((c) => c.name)).toEqual(['ts-jest', 'swc']);
    expect(jestConfigs[0].code).toMatch(/'ts-jest'/);
    expect(jestConfigs[1].code).toMatch(/'@swc\/jest'[\s\S]*legacyDecorator: true, decoratorMetadata: true/);
  });

  it('has recipes for a unit test of a service and of a controller, and e2e tests', () => {
    expect(recipes.map((r) => r.name)).toEqual(['wallet.service.spec.ts', 'exports.controller.spec.ts', 'rewards.e2e.spec.ts']);
  });

  it.each(recipes.map((r) => [r.name, r.code]))('%s is a whole spec file: it imports the library and has tests', (_name, code) => {
    expect(code).toMatch(/^import .* from '@nestjs\/common';$/m);
    expect(code).toMatch(/from 'nestjs-serialized(\/testing)?';$/m);
    expect(code).toMatch(/^it\('/m);
  });
});

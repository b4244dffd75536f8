import fs from 'node:fs';
import { ENV_EXAMPLE, envExampleSection, expectedDocs, README, readmeTable } from '../../scripts/options-docs';
import { SERIALIZED_OPTION_SPECS } from 'nestjs-serialized/config/serialized-options.schema';

describe('README options table and .env.example (generated from the options table)', () => {
  it('match the options table: run `npm run docs:options` after changing it', () => {
    const expected = expectedDocs();
    expect(fs.readFileSync(README, 'utf8')).toBe(expected.readme);
    expect(fs.readFileSync(ENV_EXAMPLE, 'utf8')).toBe(expected.envExample);
  });

  it('have a row for every option and a line for every variable', () => {
    const table = readmeTable();
    const env = envExampleSection();
    for (const [, spec] of SERIALIZED_OPTION_SPECS) {
      if (spec.option) expect(table).toContain(`| \`${spec.option}\` |`);
      if (spec.env) {
        expect(table).toContain(`\`${spec.env}\``);
        expect(env).toMatch(new RegExp(`^${spec.env}=`, 'm'));
      }
    }
  });
});

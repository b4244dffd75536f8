/**
 * The package as a user gets it: scripts/consumer-test.js packs the
 * library, installs the tarball into fresh apps — one with only the required peers,
 * one with every optional peer — and type-checks them against the packed .d.ts with
 * `strict` and `skipLibCheck: false` in `commonjs` and `nodenext`, with every
 * TypeScript block of README.md and docs/ compiled on its own; then runs the smoke
 * app and the missing-peer start-ups in the first, and docs/testing.md's recipes
 * under ts-jest and @swc/jest in the second. Each failure names its file and line.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

jest.setTimeout(600_000);

interface Report {
  tarball: { files: number; bytes: number };
  consumers: Record<string, string[]>;
  configurations: { name: string; errors: string[] }[];
  docs: {
    blocks: { file: string; line: number; errors: { at: string; code: string; message: string; configuration: string }[] }[];
    fragments: { file: string; line: number; reason: string }[];
    problems: string[];
  };
  smoke: { status: number; output: string };
  missingPeers: { status: number; output: string };
  recipes: {
    config: string;
    status: number;
    files: { file: string; passed: number; failed: string[]; error?: string }[];
    output: string;
  }[];
}

const ROOT = path.join(__dirname, '..', '..');
const OPTIONAL = [
  'ioredis',
  'pg',
  '@types/pg',
  'bullmq',
  '@nestjs/bullmq',
  '@nestjs/terminus',
  '@opentelemetry/api',
  '@nestjs/microservices',
  '@nestjs/websockets',
  '@nestjs/graphql',
];
let report: Report;

beforeAll(() => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'serialized-consumer-report-')), 'report.json');
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'consumer-test.js'), '--json', out], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 580_000,
  });
  if (!fs.existsSync(out)) throw new Error(`scripts/consumer-test.js wrote no report (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
  report = JSON.parse(fs.readFileSync(out, 'utf8')) as Report;
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
});

describe('the packed package in a fresh app', () => {
  it('ships compiled code and declarations only', () => {
    expect(report.tarball.files).toBeGreaterThan(100);
    expect(report.tarball.bytes).toBeLessThan(1024 * 1024);
  });

  it('the required-peers app has none of the optional peers', () => {
    expect(report.consumers['required-peers'].filter((name) => OPTIONAL.includes(name))).toEqual([]);
    expect(report.consumers['all-peers']).toEqual(expect.arrayContaining(OPTIONAL));
  });

  it.each(['required-peers / commonjs', 'required-peers / nodenext', 'all-peers / commonjs', 'all-peers / nodenext'])(
    'type-checks with strict and skipLibCheck false: %s',
    (name) => {
      const configuration = report.configurations.find((c) => c.name === name);
      expect(configuration?.errors).toEqual([]);
    },
  );

  it('boots and serializes five concurrent requests', () => {
    expect([report.smoke.status, report.smoke.output]).toEqual([0, expect.stringContaining('5 × 201, ran one at a time')]);
  });

  it('stops start-up with one SerializedConfigError per missing optional peer: ioredis, pg, mysql2, bullmq, @nestjs/terminus, @nestjs-cls/transactional, @opentelemetry/api', () => {
    expect(report.missingPeers.output.split('\n')).toEqual(
      ['ioredis', 'pg', 'mysql2', 'bullmq', '@nestjs/terminus', '@nestjs-cls/transactional', '@opentelemetry/api'].map(
        (peer) => `${peer}: SerializedConfigError as expected`,
      ),
    );
    expect(report.missingPeers.status).toBe(0);
  });
});

describe('every TypeScript block of README.md and docs/ compiles on its own', () => {
  it('fences are well-formed, and each fragment says why it cannot stand alone', () => {
    expect(report.docs.problems).toEqual([]);
    expect(report.docs.fragments.every((f) => f.reason.length > 10)).toBe(true);
    expect(report.docs.blocks.length).toBeGreaterThanOrEqual(19);
  });

  it('no block has a compile error (file:line of each)', () => {
    const errors = report.docs.blocks.flatMap((block) => block.errors.map((e) => `${e.at}: ${e.code} ${e.message} (${e.configuration})`));
    expect(errors).toEqual([]);
  });
});

describe("docs/testing.md's recipes run as spec files", () => {
  it.each(['ts-jest', 'swc'])('under the jest config for %s', (config) => {
    const run = report.recipes.find((r) => r.config === config);
    expect(run?.output).toBe('');
    expect(run?.files.map((f) => [f.file, f.failed, f.error ?? null]).sort()).toEqual(
      ['exports.controller.spec.ts', 'rewards.e2e.spec.ts', 'wallet.service.spec.ts'].map((file) => [file, [], null]),
    );
    expect(run?.files.every((f) => f.passed > 0)).toBe(true);
    expect(run?.status).toBe(0);
  });
});

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { WAITER_PHASES } from 'nestjs-serialized/providers/redis/waiting/redis.waiter';

/**
 * One name per protocol concept (models/VOCABULARY.md): the Redis waiter phases in
 * the code's one writer of waiter state are the phases of the vocabulary's table,
 * and, once the Redis model exists (models/redis.pml), its `mtype:waiter` states.
 * Promela names cannot hold a hyphen: `gave_up` there is `gave-up` here.
 */
const MODELS = path.join(__dirname, '..', '..', 'models');

/** The phases in the first table of VOCABULARY.md's "A waiter" section. */
function vocabularyPhases(markdown: string): string[] {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('A waiter'));
  if (!section) throw new Error('models/VOCABULARY.md has no "A waiter" section');
  const start = section.indexOf('| phase |');
  if (start < 0) throw new Error('models/VOCABULARY.md has no table of waiter phases');
  const table = section.slice(start).split(/\n\s*\n/)[0];
  return [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((match) => match[1]);
}

/** The states of `mtype:waiter = { ... }` in a Promela model, or undefined without one. */
function modelStates(promela: string): string[] | undefined {
  const match = /mtype\s*:\s*waiter\s*=\s*\{([^}]*)\}/.exec(promela.replace(/\/\*[\s\S]*?\*\//g, ''));
  return match?.[1]
    .split(',')
    .map((name) => name.trim().replace(/_/g, '-'))
    .filter(Boolean);
}

describe('the protocol vocabulary', () => {
  it('names the Redis waiter phases of the code as models/VOCABULARY.md does', () => {
    const phases = vocabularyPhases(readFileSync(path.join(MODELS, 'VOCABULARY.md'), 'utf8'));
    expect(phases.length).toBeGreaterThan(0);
    expect([...WAITER_PHASES].sort()).toEqual([...phases].sort());
  });

  it('names them as the Redis model does, once models/redis.pml exists', () => {
    const file = path.join(MODELS, 'redis.pml');
    // Until the Redis model is merged there is nothing to compare; from then on it must agree.
    if (!existsSync(file)) return;
    const states = modelStates(readFileSync(file, 'utf8'));
    expect(states).toBeDefined();
    expect([...states!].sort()).toEqual([...WAITER_PHASES].sort());
  });

  it('names the shaped waiter phases of the Redis holders model as the plain ones, without riding', () => {
    // Shaped callers never ride (each asks Redis): their phases are the plain waiter's others.
    const states = modelStates(readFileSync(path.join(MODELS, 'redis-holders.pml'), 'utf8'));
    expect(states).toBeDefined();
    expect([...states!].sort()).toEqual(WAITER_PHASES.filter((phase) => phase !== 'riding').sort());
  });

  it('reads a Promela waiter type as the model writes it', () => {
    expect(modelStates('mtype : waiter = { sending, queued, riding, confirming, granted, gave_up };')).toEqual([
      'sending',
      'queued',
      'riding',
      'confirming',
      'granted',
      'gave-up',
    ]);
    expect(modelStates('mtype:fault = { crash }')).toBeUndefined();
  });
});

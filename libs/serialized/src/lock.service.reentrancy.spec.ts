import { Test } from '@nestjs/testing';
import { resolveSerializedOptions } from './config/serialized-options.resolver';
import { Serialized } from './decorators/serialized.decorator';
import { LockTimeoutError } from './errors';
import { LockService, type RunOptions } from './lock.service';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';
import { SERIALIZED_LOCK_SERVICE } from './serialized.constants';
import { SerializedModule } from './serialized.module';

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A section on `key` that spawns work (a timer, as a lazily started batch flusher
 * would) asking for `key` too, then lets the event loop turn a few times while it
 * still holds the key. Returns the order in which the holder finished and the
 * spawned work ran.
 */
async function spawnInsideSection(
  service: LockService,
  key: string,
  holder: RunOptions,
  spawn: (record: () => void) => Promise<unknown>,
): Promise<string[]> {
  const events: string[] = [];
  let spawned!: Promise<unknown>;
  await service.run(
    key,
    async () => {
      let asked!: () => void;
      const timerFired = new Promise<void>((resolve) => (asked = resolve));
      setTimeout(() => {
        spawned = spawn(() => events.push('spawned ran'));
        asked();
      }, 0);
      await timerFired;
      // A spawned call that joins the holder runs within these turns; one that queues cannot.
      for (let i = 0; i < 5; i++) await macrotask();
      events.push('holder done');
    },
    holder,
  );
  await spawned;
  return events;
}

class Totals {
  @Serialized('0', { scope: 'account', reentrant: false })
  async flushAlone(_accountId: string, record: () => void): Promise<void> {
    record();
  }

  @Serialized('0', { scope: 'account' })
  async flushJoining(_accountId: string, record: () => void): Promise<void> {
    record();
  }
}

describe('Reentrancy follows the async context; reentrant: false opts out', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    service = new LockService(provider);
  });

  afterEach(async () => {
    await provider.close();
  });

  it('by default, work spawned inside a section that asks for its key runs at once, while the holder still holds it', async () => {
    const events = await spawnInsideSection(service, 'k', {}, (record) => service.run('k', record, { waitTimeoutMs: 2000 }));
    expect(events).toEqual(['spawned ran', 'holder done']);
  });

  it('run option reentrant: false on the spawned call: it queues behind the holder', async () => {
    const events = await spawnInsideSection(service, 'k', {}, (record) => service.run('k', record, { reentrant: false }));
    expect(events).toEqual(['holder done', 'spawned ran']);
    expect(provider.activeKeys).toBe(0);
  });

  it('run option reentrant: false on the section: nothing started inside it joins it', async () => {
    let heldInside: boolean | undefined;
    const events = await spawnInsideSection(service, 'k', { reentrant: false }, (record) =>
      service.run('k', () => {
        record();
      }),
    );
    await service.run('k', () => (heldInside = service.isHeld('k')), { reentrant: false });
    expect(events).toEqual(['holder done', 'spawned ran']);
    expect(heldInside).toBe(false);
  });

  it('the service default (the module option) applies to calls that do not say; a call may still opt back in', async () => {
    service = new LockService(provider, { reentrant: false });
    expect(await spawnInsideSection(service, 'k', {}, (record) => service.run('k', record))).toEqual(['holder done', 'spawned ran']);
    expect(
      await spawnInsideSection(service, 'k', { reentrant: true }, (record) =>
        service.run('k', record, { reentrant: true, waitTimeoutMs: 2000 }),
      ),
    ).toEqual(['spawned ran', 'holder done']);
  });

  it('decorator option reentrant: false: the decorated method queues behind a holder of its key; without it, it joins', async () => {
    const totals = new Totals();
    (totals as unknown as Record<symbol, LockService>)[SERIALIZED_LOCK_SERVICE] = service;
    expect(await spawnInsideSection(service, 'account:a1', {}, (record) => totals.flushAlone('a1', record))).toEqual([
      'holder done',
      'spawned ran',
    ]);
    expect(await spawnInsideSection(service, 'account:a1', {}, (record) => totals.flushJoining('a1', record))).toEqual([
      'spawned ran',
      'holder done',
    ]);
  });

  it('the trade-off: an awaited nested call on its own key with reentrant: false waits for itself until waitTimeoutMs', async () => {
    const inner = jest.fn();
    await expect(service.run('k', () => service.run('k', inner, { reentrant: false, waitTimeoutMs: 50 }))).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    expect(inner).not.toHaveBeenCalled();
    expect(provider.activeKeys).toBe(0);
  });

  it('refuses a reentrant that is not a boolean, before anything runs', async () => {
    const fn = jest.fn();
    await expect(service.run('k', fn, { reentrant: 'no' as unknown as boolean })).rejects.toThrow(
      'reentrant="no" is invalid: accepts true or false',
    );
    expect(fn).not.toHaveBeenCalled();
    expect(() => Serialized('id', { reentrant: 1 as unknown as boolean })({}, 'm', { value: () => undefined })).toThrow(
      /reentrant=1 is invalid/,
    );
  });
});

describe('The module default reentrant', () => {
  it('comes from the options, else SERIALIZED_REENTRANT, else true; anything but a boolean stops start-up naming it', () => {
    expect(resolveSerializedOptions({}, {}).reentrant).toBe(true);
    expect(resolveSerializedOptions({}, { SERIALIZED_REENTRANT: 'false' }).reentrant).toBe(false);
    expect(resolveSerializedOptions({ reentrant: true }, { SERIALIZED_REENTRANT: 'false' }).reentrant).toBe(true);
    expect(() => resolveSerializedOptions({}, { SERIALIZED_REENTRANT: 'no' })).toThrow(
      'SERIALIZED_REENTRANT="no" is invalid: accepts true or false (default true)',
    );
    expect(() => resolveSerializedOptions({ reentrant: 'false' as unknown as boolean }, {})).toThrow(
      'options.reentrant="false" is invalid',
    );
  });

  it('SerializedModule.forRoot({ reentrant: false }) gives a LockService whose calls never join a holder', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [SerializedModule.forRoot({ driver: 'memory', reentrant: false })],
    }).compile();
    const service = moduleRef.get(LockService);
    expect(service.reentrant).toBe(false);
    expect(await spawnInsideSection(service, 'k', {}, (record) => service.run('k', record))).toEqual(['holder done', 'spawned ran']);
    await moduleRef.close();

    const byDefault = await Test.createTestingModule({ imports: [SerializedModule.forRoot({ driver: 'memory' })] }).compile();
    expect(byDefault.get(LockService).reentrant).toBe(true);
    await byDefault.close();
  });
});

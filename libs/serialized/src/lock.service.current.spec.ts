import { LockService } from './lock.service';
import { InMemoryLockProvider } from './providers/memory/in-memory-lock.provider';

describe('LockService.current', () => {
  let provider: InMemoryLockProvider;
  let service: LockService;

  beforeEach(() => {
    provider = new InMemoryLockProvider();
    service = new LockService(provider);
  });
  afterEach(async () => {
    await provider.close();
  });

  it('is undefined outside any section, and after the section ended', async () => {
    expect(service.current()).toBeUndefined();
    expect(service.current('a')).toBeUndefined();
    await service.run('a', () => undefined);
    expect(service.current()).toBeUndefined();
  });

  it('is the lock fn was given, across awaits; by key, the one for that key', async () => {
    await service.run('a', async (lock) => {
      await new Promise((resolve) => setImmediate(resolve));
      expect(service.current()).toBe(lock);
      expect(service.current('a')).toBe(lock);
      expect(service.current('b')).toBeUndefined();
    });
  });

  it('without a key is the innermost section, also when a key is entered again', async () => {
    await service.run('outer', async (outer) => {
      await service.run('inner', async (inner) => {
        expect(service.current()).toBe(inner);
        expect(service.current('outer')).toBe(outer);
        // Reentrant: the outer key asked again runs at once with the same lock, now innermost.
        await service.run('outer', (again) => {
          expect(again).toBe(outer);
          expect(service.current()).toBe(outer);
        });
        expect(service.current()).toBe(inner);
      });
      expect(service.current()).toBe(outer);
    });
  });

  it('a nested call that outlives its section does not see the ended lock', async () => {
    let late: Promise<unknown> | undefined;
    await service.run('outer', async (outer) => {
      await service.run('inner', () => {
        late = new Promise((resolve) => setTimeout(resolve, 20)).then(() => service.current());
      });
      expect(service.current()).toBe(outer);
    });
    await expect(late).resolves.toBeUndefined();
  });
});

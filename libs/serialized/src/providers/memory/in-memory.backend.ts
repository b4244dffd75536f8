import type { Logger } from '@nestjs/common';
import { LockTimeoutError } from '../../errors';
import { IgnoredLeaseNote } from '../../internal/ignored-lease.note';
import type { LineCaller } from '../../local/line.caller';
import type { LockBackend } from '../../local/lock-backend.interface';
import { InMemoryLock, type InMemoryLockOwner } from './in-memory.lock';

/**
 * The in-memory backend: nothing to ask. A free key is granted at once with the
 * next fencing token; the line does everything else.
 */
export class InMemoryBackend implements LockBackend<InMemoryLock> {
  private lastToken = 0;
  private readonly leaseNote: IgnoredLeaseNote;

  constructor(
    private readonly owner: InMemoryLockOwner,
    logger: Logger,
    name: string,
  ) {
    this.leaseNote = new IgnoredLeaseNote(
      logger,
      name,
      'an in-memory lock has no lease; it is held until released (its holder cannot crash without the whole process)',
    );
  }

  takeNow(key: string, leaseMs: number | undefined): InMemoryLock {
    this.leaseNote.check(leaseMs, key);
    return new InMemoryLock(key, ++this.lastToken, this.owner);
  }

  take(caller: LineCaller<InMemoryLock>): InMemoryLock {
    return this.takeNow(caller.key, caller.leaseMs);
  }

  release(): undefined {
    return undefined;
  }

  timeoutError(key: string, waitTimeoutMs: number): LockTimeoutError {
    return new LockTimeoutError(key, waitTimeoutMs);
  }
}

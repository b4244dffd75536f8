import { timingSafeEqual } from 'node:crypto';
import { Controller, Get, Headers, Inject, NotFoundException, Param } from '@nestjs/common';
import { LockService } from 'nestjs-serialized';
import { APP_CONFIG, type AppConfig } from '../config/app.config';

/** The header that carries `ADMIN_LOCKS_TOKEN`. */
export const ADMIN_TOKEN_HEADER = 'x-admin-token';

/**
 * `GET /admin/locks/:key`: `lockService.inspect(key)` as JSON (fencing tokens as
 * strings) — who holds a lock key (e.g. `reward:42`), since when, and how many
 * wait, in every instance. It names who holds your users' keys, so it answers
 * only a request whose `x-admin-token` header equals `ADMIN_LOCKS_TOKEN`; without
 * that variable the controller is not even registered (see `ObservabilityModule`).
 * Any other request gets 404, as if the route did not exist.
 */
@Controller('admin/locks')
export class AdminLocksController {
  private readonly token: Buffer;

  constructor(
    private readonly locks: LockService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.token = Buffer.from(config.adminLocksToken ?? '');
  }

  @Get(':key')
  async inspect(@Param('key') key: string, @Headers(ADMIN_TOKEN_HEADER) given: string | undefined) {
    if (!this.allowed(given)) throw new NotFoundException();
    const info = await this.locks.inspect(key);
    return { ...info, holders: info.holders.map((holder) => ({ ...holder, fencingToken: holder.fencingToken?.toString() })) };
  }

  private allowed(given: string | undefined): boolean {
    const candidate = Buffer.from(given ?? '');
    // Compared in constant time: the answer's timing tells nothing of the token.
    return this.token.length > 0 && candidate.length === this.token.length && timingSafeEqual(candidate, this.token);
  }
}

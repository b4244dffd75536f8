import { Controller, Get } from '@nestjs/common';
import { DigestLog, type DigestRun } from './digest.log';

/** `GET /digests`: the digests this instance sent (the demo reads every instance's). */
@Controller('digests')
export class DigestController {
  constructor(private readonly log: DigestLog) {}

  @Get()
  list(): { instance: number; runs: readonly DigestRun[] } {
    return { instance: process.pid, runs: this.log.list() };
  }
}

import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { OncePerTick } from 'nestjs-serialized';
import { DigestLog } from './digest.log';

/**
 * When the digest goes out: `DIGEST_CRON` (default every night at 03:00). Read when
 * the class is defined, as a decorator's argument must be; the demo sets it to every
 * second before it starts the instances.
 */
const DIGEST_CRON = process.env.DIGEST_CRON?.trim() || '0 0 3 * * *';

/**
 * The nightly digest: every instance of the app schedules it, and `@OncePerTick`
 * makes exactly one of them send it for each tick (docs/scheduling.md). Its naive
 * twin, the same job without it, is sent by every instance.
 */
@Injectable()
export class DigestJob {
  constructor(private readonly log: DigestLog) {}

  @Cron(DIGEST_CRON)
  @OncePerTick({ name: 'nightly-digest' })
  async sendDigest(): Promise<void> {
    // Gathering the day's activity and mailing it would go here.
    this.log.record('once-per-tick');
  }

  @Cron(DIGEST_CRON)
  async sendDigestNaive(): Promise<void> {
    this.log.record('naive');
  }
}

import { randomUUID } from 'node:crypto';
import {
  Body,
  ConflictException,
  Controller,
  Headers,
  Injectable,
  InternalServerErrorException,
  Module,
  Param,
  Post,
  Res,
  UseGuards,
} from '@nestjs/common';
import { Idempotent } from 'nestjs-serialized';
import { deferred } from '../../support/timing';
import { FakeAuthGuard } from '../../e2e/fixtures/fixtures.controller';

/** How often each fixture handler ran in this app, and gates that hold a handler until the test opens them. */
@Injectable()
export class IdempotencyProbe {
  readonly runs = new Map<string, number>();
  readonly inside = new Set<string>();
  private readonly gates = new Map<string, ReturnType<typeof deferred<void>>>();

  ran(what: string): number {
    const n = (this.runs.get(what) ?? 0) + 1;
    this.runs.set(what, n);
    return n;
  }

  count(what: string): number {
    return this.runs.get(what) ?? 0;
  }

  async pass(id: string): Promise<void> {
    this.inside.add(id);
    try {
      await this.gateOf(id).promise;
    } finally {
      this.inside.delete(id);
    }
  }

  open(id: string): void {
    this.gateOf(id).resolve();
  }

  openAll(): void {
    for (const gate of this.gates.values()) gate.resolve();
  }

  private gateOf(id: string): ReturnType<typeof deferred<void>> {
    let gate = this.gates.get(id);
    if (!gate) this.gates.set(id, (gate = deferred<void>()));
    return gate;
  }
}

type HeaderResponse = { header(name: string, value: string): unknown };
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

@Controller('idem')
export class IdempotencyFixturesController {
  constructor(private readonly probe: IdempotencyProbe) {}

  /** A payment-like create: 201, a fresh id per run, a Location header. */
  @Post('pay/:account')
  @Idempotent()
  async pay(@Param('account') account: string, @Body() body: { amount?: number }, @Res({ passthrough: true }) res: HeaderResponse) {
    const run = this.probe.ran(`pay:${account}`);
    await pause(60);
    const id = randomUUID();
    res.header('Location', `/idem/pay/${account}/${id}`);
    return { id, account, amount: body.amount ?? null, run };
  }

  @Post('required')
  @Idempotent({ required: true })
  required() {
    return { run: this.probe.ran('required') };
  }

  @Post('reject/:id')
  @Idempotent({ mode: 'reject' })
  async reject(@Param('id') id: string) {
    this.probe.ran(`reject:${id}`);
    await this.probe.pass(id);
    return { id, at: randomUUID() };
  }

  /** Waits in its handler until the test opens the gate (the crash test kills the process meanwhile). */
  @Post('hold/:id')
  @Idempotent()
  async hold(@Param('id') id: string) {
    const run = this.probe.ran(`hold:${id}`);
    await this.probe.pass(id);
    return { id, run, pid: process.pid };
  }

  @Post('ttl/:id')
  @Idempotent({ ttlMs: 600 })
  ttl(@Param('id') id: string) {
    return { id, run: this.probe.ran(`ttl:${id}`) };
  }

  /** Fails with a 500 when asked to (the header is not part of the fingerprint). */
  @Post('flaky/:id')
  @Idempotent()
  flaky(@Param('id') id: string, @Headers('x-fail') fail?: string) {
    const run = this.probe.ran(`flaky:${id}`);
    if (fail) throw new InternalServerErrorException(`failed on run ${run}`);
    return { id, run };
  }

  @Post('flaky-stored/:id')
  @Idempotent({ storeServerErrors: true })
  flakyStored(@Param('id') id: string) {
    const run = this.probe.ran(`flaky-stored:${id}`);
    throw new InternalServerErrorException(`failed on run ${run}`);
  }

  /** A 4xx of the handler's own: stored and replayed like a success. */
  @Post('taken/:id')
  @Idempotent()
  taken(@Param('id') id: string) {
    const run = this.probe.ran(`taken:${id}`);
    throw new ConflictException({ statusCode: 409, message: `already taken (run ${run})` });
  }

  @Post('tenant')
  @UseGuards(FakeAuthGuard)
  @Idempotent({ scope: 'user.id' })
  tenant(@Body() body: { note?: string }) {
    return { note: body.note ?? null, at: randomUUID(), run: this.probe.ran('tenant') };
  }

  @Post('big/:id')
  @Idempotent({ maxResponseBytes: 1000 })
  big(@Param('id') id: string) {
    return { id, run: this.probe.ran(`big:${id}`), filler: 'x'.repeat(2000) };
  }

  @Post('any-body/:id')
  @Idempotent({ fingerprint: false })
  anyBody(@Param('id') id: string, @Body() body: unknown) {
    return { id, body, run: this.probe.ran(`any-body:${id}`) };
  }

  @Post('body-key')
  @Idempotent({ key: 'body.requestId' })
  bodyKey(@Body() body: { requestId?: string }) {
    return { requestId: body.requestId ?? null, run: this.probe.ran(`body-key:${body.requestId}`), at: randomUUID() };
  }
}

@Module({ controllers: [IdempotencyFixturesController], providers: [IdempotencyProbe] })
export class IdempotencyFixturesModule {}

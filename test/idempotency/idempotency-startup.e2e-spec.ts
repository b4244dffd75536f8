import { Controller, Get, Module, Next, Post, Res, Sse, StreamableFile } from '@nestjs/common';
import { Observable, of } from 'rxjs';
import { Test } from '@nestjs/testing';
import { Idempotent, SerializedConfigError, SerializedModule } from 'nestjs-serialized';
import { createApp } from '../../src/app.factory';
import { ADAPTERS, type Adapter } from '../e2e/http-app';

@Controller('bad')
class UnreplayableController {
  @Post('res')
  @Idempotent()
  writesItself(@Res() res: { send(body: string): void }) {
    res.send('done');
  }

  @Post('next')
  @Idempotent()
  callsNext(@Next() next: () => void) {
    next();
  }

  @Sse('events')
  @Idempotent()
  events(): Observable<{ data: string }> {
    return of({ data: 'x' });
  }

  @Get('file')
  @Idempotent()
  file(): StreamableFile {
    return new StreamableFile(Buffer.from('x'));
  }

  /** Allowed: Nest still sends what the handler returns. */
  @Post('passthrough')
  @Idempotent()
  passthrough(@Res({ passthrough: true }) res: { header(n: string, v: string): void }) {
    res.header('Location', '/x');
    return { ok: true };
  }
}

@Module({ controllers: [UnreplayableController] })
class UnreplayableModule {}

@Controller('good')
class ReplayableController {
  @Post('passthrough')
  @Idempotent()
  passthrough(@Res({ passthrough: true }) res: { header(n: string, v: string): void }) {
    res.header('Location', '/x');
    return { ok: true };
  }
}

@Module({ controllers: [ReplayableController] })
class ReplayableModule {}

describe.each(ADAPTERS.map((a) => [a]))('@Idempotent at start-up (%s)', (adapter: Adapter) => {
  it('refuses handlers whose response cannot be replayed, naming each Class#method, and starts nothing', async () => {
    const error = await createApp({
      config: { adapter, store: 'memory' },
      serialized: { driver: 'memory' },
      imports: [UnreplayableModule],
      logger: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SerializedConfigError);
    const problems = (error as SerializedConfigError).problems;
    expect(problems).toEqual([
      expect.stringContaining(
        '@Idempotent on UnreplayableController#writesItself: the handler takes @Res()/@Response() (parameter 0) and writes the response itself',
      ),
      expect.stringContaining('@Idempotent on UnreplayableController#callsNext: the handler takes @Next() (parameter 0)'),
      expect.stringContaining('@Idempotent on UnreplayableController#events: an @Sse() route streams its response'),
      expect.stringContaining('@Idempotent on UnreplayableController#file: the handler returns a StreamableFile'),
    ]);
  });

  it('accepts @Res({ passthrough: true })', async () => {
    const app = await createApp({
      config: { adapter, store: 'memory' },
      serialized: { driver: 'memory' },
      imports: [ReplayableModule],
      logger: false,
    });
    await app.close();
  });
});

describe('SERIALIZED_IDEMPOTENCY_TTL_MS at start-up', () => {
  const saved = process.env.SERIALIZED_IDEMPOTENCY_TTL_MS;
  afterEach(() => {
    if (saved === undefined) delete process.env.SERIALIZED_IDEMPOTENCY_TTL_MS;
    else process.env.SERIALIZED_IDEMPOTENCY_TTL_MS = saved;
  });

  it('a bad value stops start-up, naming the variable and what it accepts', async () => {
    process.env.SERIALIZED_IDEMPOTENCY_TTL_MS = '1 day';
    const error = await Test.createTestingModule({ imports: [SerializedModule.forRoot({ driver: 'memory' })] })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SerializedConfigError);
    expect((error as Error).message).toContain(
      'SERIALIZED_IDEMPOTENCY_TTL_MS="1 day" is invalid: accepts an integer number of milliseconds from 100',
    );
  });
});

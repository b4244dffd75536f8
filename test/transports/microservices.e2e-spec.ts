import { Controller, type INestMicroservice } from '@nestjs/common';
import { ClientProxyFactory, MessagePattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { Serialized, type SerializedModuleOptions } from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
import { freeLocalPort } from '../support/local-server';
import { uniqueId } from '../support/timing';
import {
  EXPECTED,
  inScenario,
  leaksIn,
  LockErrorsModule,
  LockErrorsService,
  SCENARIOS,
  type Scenario,
} from './support/lock-errors.fixture';

/** An undecorated message handler: the lock errors come from the service it calls. */
@Controller()
class ErrorsHandler {
  constructor(private readonly service: LockErrorsService) {}

  @MessagePattern('run')
  run(@Payload() { scenario, id }: { scenario: Scenario; id: string }): Promise<string> {
    return inScenario(this.service, scenario, id, (arg) => this.service[scenario](arg));
  }

  /** A decorated handler: its interceptor throws. */
  @MessagePattern('decorated')
  @Serialized('id', { scope: 'busy', mode: 'reject' })
  decorated(@Payload() _data: { id: string }): string {
    return 'ran';
  }
}

async function start(options: SerializedModuleOptions = {}) {
  const logs = new CapturingLogger();
  const port = await freeLocalPort();
  const moduleRef = await Test.createTestingModule({
    imports: [LockErrorsModule.forRoot(uniqueId('transport-rpc'), options)],
    controllers: [ErrorsHandler],
  }).compile();
  const app: INestMicroservice = moduleRef.createNestMicroservice({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port },
    logger: logs,
  });
  await app.listen();
  const client: ClientProxy = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
  return { app, client, logs, service: app.get(LockErrorsService) };
}

/** The error the client receives (the RpcException's payload), or a failure if the call succeeded. */
async function errorOf(client: ClientProxy, scenario: Scenario, id = uniqueId('k')): Promise<Record<string, unknown>> {
  try {
    const result = await firstValueFrom(client.send('run', { scenario, id }));
    throw new Error(`${scenario} succeeded with ${JSON.stringify(result)}`);
  } catch (error) {
    return error as Record<string, unknown>;
  }
}

describe('lock errors thrown anywhere in a microservice handler (TCP)', () => {
  let started: Awaited<ReturnType<typeof start>> | undefined;
  afterEach(async () => {
    started?.client.close();
    await started?.app.close();
    started = undefined;
  });

  it('reach the client as the RpcException payload with the status and a stable code, naming no key or handler', async () => {
    started = await start();
    for (const scenario of SCENARIOS) {
      const expected = EXPECTED[scenario];
      const id = uniqueId('k');
      const error = await errorOf(started.client, scenario, id);
      expect([scenario, error]).toEqual([
        scenario,
        { statusCode: expected.status, error: expect.any(String), code: expected.code, message: expected.message },
      ]);
      expect([scenario, leaksIn(error, id)]).toEqual([scenario, []]);
      expect(
        started.logs.containing(
          new RegExp(
            `Answered ${expected.status} ${expected.code} \\(rpc\\): .*${scenario === 'badKey' ? 'LockErrorsService#badKey' : id}`,
          ),
          'debug',
        ),
      ).toHaveLength(1);
    }
    expect(started.service.runs).toEqual({ busy: 0, timeout: 0, down: 0, badKey: 0, lost: 0 });
    expect(started.logs.containing('RpcExceptionsHandler')).toEqual([]);
    expect(started.logs.lines.filter((l) => l.level === 'error').map((l) => l.text)).toEqual([
      // Refused, or not connected within the bound before the refusal was read (a busy host): Redis is down either way.
      expect.stringMatching(/^Lock backend unavailable: .*LockBackendError: .*(ECONNREFUSED|could not connect within \d+ ms)/),
      expect.stringMatching(/^Lock backend unavailable: .*LockLostError: /),
    ]);
  });

  it("a decorated handler whose key another instance holds answers the same way (the interceptor's error)", async () => {
    started = await start();
    const id = uniqueId('k');
    const held = await started.service.hold('busy', id);
    try {
      const error = await firstValueFrom(started.client.send('decorated', { id })).then(
        (result) => ({ succeeded: result }),
        (failure: unknown) => failure,
      );
      expect(error).toMatchObject({ statusCode: 429, code: 'LOCK_BUSY' });
    } finally {
      await held?.release();
    }
  });

  it('errorMapping.body is the payload', async () => {
    started = await start({ errorMapping: { body: (error, status) => ({ failure: error.name, status }) } });
    expect(await errorOf(started.client, 'timeout')).toEqual({ failure: 'LockTimeoutError', status: 429 });
  });
});

import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io, type Socket } from 'socket.io-client';
import { Serialized, type SerializedModuleOptions } from 'nestjs-serialized';
import { CapturingLogger } from '../support/capturing-logger';
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

/** An undecorated gateway handler: the lock errors come from the service it calls. */
@WebSocketGateway()
class ErrorsGateway {
  constructor(private readonly service: LockErrorsService) {}

  @SubscribeMessage('run')
  async run(@MessageBody() { scenario, id }: { scenario: Scenario; id: string }) {
    return { event: 'ran', data: await inScenario(this.service, scenario, id, (arg) => this.service[scenario](arg)) };
  }

  /** A decorated handler: its interceptor throws. */
  @SubscribeMessage('decorated')
  @Serialized('id', { scope: 'busy', mode: 'reject' })
  decorated(@MessageBody() _data: { id: string }) {
    return { event: 'ran', data: 'ran' };
  }
}

async function start(options: SerializedModuleOptions = {}) {
  const logs = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [LockErrorsModule.forRoot(uniqueId('transport-ws'), options)],
    providers: [ErrorsGateway],
  }).compile();
  const app: INestApplication = moduleRef.createNestApplication({ logger: logs });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  const socket = io(url, { transports: ['websocket'], forceNew: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return { app, socket, logs, service: app.get(LockErrorsService) };
}

/** What the gateway answers to one `run` message: the `exception` event's payload, or `ran`. */
function answerTo(
  socket: Socket,
  scenario: Scenario | 'decorated',
  id = uniqueId('k'),
): Promise<{ event: string; data: Record<string, unknown> }> {
  return new Promise((resolve) => {
    const done = (event: string) => (data: Record<string, unknown>) => {
      socket.off('exception');
      socket.off('ran');
      resolve({ event, data });
    };
    socket.once('exception', done('exception'));
    socket.once('ran', done('ran'));
    if (scenario === 'decorated') socket.emit('decorated', { id });
    else socket.emit('run', { scenario, id });
  });
}

describe('lock errors thrown anywhere in a WebSocket gateway handler (socket.io)', () => {
  let started: Awaited<ReturnType<typeof start>> | undefined;
  afterEach(async () => {
    started?.socket.disconnect();
    await started?.app.close();
    started = undefined;
  });

  it("reach the client as the WsException payload (the 'exception' event) with the status and a stable code, naming no key or handler", async () => {
    started = await start();
    for (const scenario of SCENARIOS) {
      const expected = EXPECTED[scenario];
      const id = uniqueId('k');
      const answer = await answerTo(started.socket, scenario, id);
      expect([scenario, answer]).toEqual([
        scenario,
        {
          event: 'exception',
          data: { statusCode: expected.status, error: expect.any(String), code: expected.code, message: expected.message },
        },
      ]);
      expect([scenario, leaksIn(answer, id)]).toEqual([scenario, []]);
      expect(
        started.logs.containing(
          new RegExp(`Answered ${expected.status} ${expected.code} \\(ws\\): .*${scenario === 'badKey' ? 'LockErrorsService#badKey' : id}`),
          'debug',
        ),
      ).toHaveLength(1);
    }
    expect(started.service.runs).toEqual({ busy: 0, timeout: 0, down: 0, badKey: 0, lost: 0 });
    expect(started.logs.containing('WsExceptionsHandler')).toEqual([]);
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
      expect(await answerTo(started.socket, 'decorated', id)).toEqual({
        event: 'exception',
        data: expect.objectContaining({ statusCode: 429, code: 'LOCK_BUSY' }),
      });
    } finally {
      await held?.release();
    }
  });

  it('errorMapping.body is the payload', async () => {
    started = await start({ errorMapping: { body: (error, status) => ({ failure: error.name, status }) } });
    expect(await answerTo(started.socket, 'badKey')).toEqual({
      event: 'exception',
      data: { failure: 'SerializationKeyError', status: 400 },
    });
  });
});

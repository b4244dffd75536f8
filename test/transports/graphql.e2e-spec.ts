import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { INestApplication } from '@nestjs/common';
import { Args, GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import request from 'supertest';
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

/** An undecorated resolver: the lock errors come from the service it calls. */
@Resolver()
class ErrorsResolver {
  constructor(private readonly service: LockErrorsService) {}

  @Query(() => String)
  ping() {
    return 'pong';
  }

  @Mutation(() => String)
  run(@Args('scenario', { type: () => String }) scenario: Scenario, @Args('id', { type: () => String }) id: string): Promise<string> {
    return inScenario(this.service, scenario, id, (arg) => this.service[scenario](arg));
  }

  /** A decorated resolver: its interceptor throws. */
  @Mutation(() => String)
  @Serialized('id', { scope: 'busy', mode: 'reject' })
  decorated(@Args('id', { type: () => String }) _id: string): string {
    return 'ran';
  }
}

async function start(options: SerializedModuleOptions = {}) {
  const logs = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [
      LockErrorsModule.forRoot(uniqueId('transport-graphql'), options),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, includeStacktraceInErrorResponses: false }),
    ],
    providers: [ErrorsResolver],
  }).compile();
  const app: INestApplication = moduleRef.createNestApplication({ logger: logs, abortOnError: false });
  await app.init();
  return { app, logs, service: app.get(LockErrorsService), server: app.getHttpServer() };
}

const mutation = (scenario: Scenario, id = uniqueId('k')) => ({
  query: 'mutation Run($scenario: String!, $id: String!) { run(scenario: $scenario, id: $id) }',
  variables: { scenario, id },
});

describe('lock errors thrown anywhere in a GraphQL resolver (Apollo)', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  // @nestjs/apollo answers 200 whenever execution ran (nestjs/graphql#2940): the status travels in extensions.
  it('come back as errors whose extensions.reason, code and status say what happened, with Retry-After, naming no key or handler', async () => {
    const started = await start();
    app = started.app;
    for (const scenario of SCENARIOS) {
      const expected = EXPECTED[scenario];
      const id = uniqueId('k');
      const response = await request(started.server).post('/graphql').send(mutation(scenario, id));
      expect([scenario, response.status, response.headers['retry-after']]).toEqual([scenario, 200, expected.retryAfter]);
      expect(response.body.data).toBeNull();
      expect(response.body.errors).toHaveLength(1);
      const [error] = response.body.errors;
      expect(error.path).toEqual(['run']);
      expect(error.extensions).toEqual({
        code: expected.graphqlCode,
        reason: expected.code,
        status: expected.status,
        body: { statusCode: expected.status, error: expect.any(String), code: expected.code, message: expected.message },
      });
      expect([scenario, error.message]).toEqual([scenario, expected.message]);
      expect([scenario, leaksIn(response.body, id)]).toEqual([scenario, []]);
      // The detail is the server's: logged at debug level, with the lock key.
      expect(
        started.logs.containing(
          new RegExp(
            `Answered ${expected.status} ${expected.code} \\(graphql\\): .*${scenario === 'badKey' ? 'LockErrorsService#badKey' : id}`,
          ),
          'debug',
        ),
      ).toHaveLength(1);
    }
    expect(started.service.runs).toEqual({ busy: 0, timeout: 0, down: 0, badKey: 0, lost: 0 });
    expect(started.logs.containing('ExceptionsHandler')).toEqual([]);
    expect(started.logs.containing(/INTERNAL_SERVER_ERROR/)).toEqual([]);
    // What Nest logs at ERROR: the two 503 outages (dead backend, lost lock), once each.
    expect(started.logs.lines.filter((l) => l.level === 'error').map((l) => l.text)).toEqual([
      // Refused, or not connected within the bound before the refusal was read (a busy host): Redis is down either way.
      expect.stringMatching(/^Lock backend unavailable: .*LockBackendError: .*(ECONNREFUSED|could not connect within \d+ ms)/),
      expect.stringMatching(/^Lock backend unavailable: .*LockLostError: /),
    ]);
  });

  it("a decorated resolver whose key another instance holds answers the same way (the interceptor's error)", async () => {
    const started = await start();
    app = started.app;
    const id = uniqueId('k');
    const held = await started.service.hold('busy', id);
    try {
      const response = await request(started.server)
        .post('/graphql')
        .send({ query: 'mutation Decorated($id: String!) { decorated(id: $id) }', variables: { id } });
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body.errors[0].extensions).toMatchObject({
        code: 'TOO_MANY_REQUESTS',
        status: 429,
        reason: 'LOCK_BUSY',
        body: { code: 'LOCK_BUSY' },
      });
    } finally {
      await held?.release();
    }
  });

  it('errorMapping.body shapes extensions.body; code and status stay', async () => {
    const started = await start({ errorMapping: { body: (error, status) => ({ failure: error.name, status }) } });
    app = started.app;
    const response = await request(started.server).post('/graphql').send(mutation('busy'));
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body.errors[0].extensions).toEqual({
      code: 'TOO_MANY_REQUESTS',
      reason: 'LOCK_BUSY',
      status: 429,
      body: { failure: 'LockBusyError', status: 429 },
    });
  });
});

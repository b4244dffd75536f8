import { idempotencyStatements } from './postgres-idempotency.statements';

describe('idempotencyStatements', () => {
  it('quotes a table name or schema.name', () => {
    expect(idempotencyStatements().table).toBe('"nestjs_serialized_idempotency"');
    expect(idempotencyStatements('app.idem').schema).toContain('CREATE INDEX IF NOT EXISTS "idem_expires_at" ON "app"."idem" (expires_at)');
  });

  it('refuses names that are not plain identifiers', () => {
    for (const bad of ['a;drop table x', 'a.b.c', '"x"', '', '1abc']) expect(() => idempotencyStatements(bad)).toThrow('idempotencyTable');
  });
});

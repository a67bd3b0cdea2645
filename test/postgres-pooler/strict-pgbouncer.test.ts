/**
 * A strict PgBouncer (no `ignore_startup_parameters`) refuses the startup `options` the store's
 * own pool sends: `migrate()` says so with a {@link DatabaseSetupError} that names the pooler
 * setting to change, instead of PgBouncer's bare refusal.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { DatabaseSetupError } from '../../src/server/errors/database-setup-error.js';
import { canRunPgBouncerTests, startPgBouncer, type Bouncer } from '../support/pgbouncer.js';

const withBouncer = await canRunPgBouncerTests();
const bouncers: Bouncer[] = [];
afterAll(async () => {
  await Promise.all(bouncers.map((b) => b.stop()));
});

describe.skipIf(!withBouncer)('the PostgreSQL store behind a strict PgBouncer', () => {
  it('refuses at migrate() with an error naming ignore_startup_parameters', async () => {
    const bouncer = await startPgBouncer('transaction', { ignore_startup_parameters: '' });
    bouncers.push(bouncer);
    const store = postgresKeyStore({ connectionString: bouncer.url, schema: `strict_${process.pid}` });
    try {
      const failure = await store.migrate().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(DatabaseSetupError);
      expect((failure as DatabaseSetupError).setting).toBe('ignore_startup_parameters');
      expect((failure as Error).message).toMatch(/ignore_startup_parameters = extra_float_digits,options/);
    } finally {
      await store.close();
    }
  });
});

/**
 * A whole request's idle bound (`idle_in_transaction_session_timeout`, set for its transaction in
 * its BEGIN's message) behind PgBouncer in transaction mode: set on the server session that runs
 * the transaction, for that transaction only, so a request idle past its lease is rolled back and
 * its key freed for a duplicate, and the next client PgBouncer hands that server session to sees
 * the server's own setting again.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { canRunPgBouncerTests, startPgBouncer, type Bouncer } from '../support/pgbouncer.js';
import { runWholeRequest } from '../../src/server/store/request-transaction.js';

const withBouncer = await canRunPgBouncerTests();
const bouncers: Bouncer[] = [];
afterAll(async () => {
  await Promise.all(bouncers.map((b) => b.stop()));
});

const LEASE_MS = 1000;
const IDLE = 'idle_in_transaction_session_timeout';

describe.skipIf(!withBouncer)('a whole request behind PgBouncer in transaction mode', () => {
  it('is rolled back once idle a lease, its key then free, and leaves the setting to its transaction', { timeout: 60_000 }, async () => {
    const bouncer = await startPgBouncer('transaction');
    bouncers.push(bouncer);
    const schema = `oncely_t_pooler_idle_${process.pid}`;
    // Two instances, each with its own pool through PgBouncer.
    const pools = [0, 1].map(() => new pg.Pool({ connectionString: bouncer.url, max: 2 }));
    for (const pool of pools) pool.on('error', () => undefined);
    const [a, b] = pools.map((pool) => postgresKeyStore({ pool, schema }));
    const direct = new pg.Client({ connectionString: bouncer.direct });
    await direct.connect();
    try {
      await a!.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (note text)' });
      const input = (key: string) => ({
        clientId: 'acme',
        key,
        requestHash: 'h',
        endpoint: 'POST /x',
        requestBody: '{}',
        leaseMs: LEASE_MS,
        ttlMs: 86_400_000,
        waitMs: 8000,
      });
      const response = (by: string) => () => ({ status: 201, headers: {}, body: by });

      // A request that answers in time: the bound is its transaction's, not the server session's.
      let seen: { pid: number; idle: string } | undefined;
      await runWholeRequest(a!, input('quick'), {
        work: async (tx) => (seen = await tx.get<{ pid: number; idle: string }>(`SELECT pg_backend_pid() AS pid, current_setting('${IDLE}') AS idle`)),
        response: response('quick'),
      });
      expect(seen?.idle).toBe('1s');
      // PgBouncer hands the most recently used server session out first: the same one, reset.
      const after = await pools[0]!.query<{ pid: number; idle: string }>(`SELECT pg_backend_pid() AS pid, current_setting('${IDLE}') AS idle`);
      expect(after.rows[0]).toEqual({ pid: seen!.pid, idle: '0' });

      // A request idle past its lease (its handler stalled): PostgreSQL ends its session, which
      // rolls it back, and a duplicate waiting on the other instance owns the key.
      let inside!: () => void;
      const reached = new Promise<void>((resolve) => (inside = resolve));
      let stall!: () => void;
      const stalled = new Promise<void>((resolve) => (stall = resolve));
      const first = runWholeRequest(a!, input('idle'), {
        async work(tx) {
          await tx.run('INSERT INTO notes (note) VALUES ($1)', ['first']);
          inside();
          await stalled;
          return tx.run('INSERT INTO notes (note) VALUES ($1)', ['first, late']);
        },
        response: response('first'),
      }).then(
        () => 'stored',
        () => 'failed',
      );
      await reached;
      const startedAt = performance.now();
      const duplicate = await runWholeRequest(b!, input('idle'), {
        work: (tx) => tx.run('INSERT INTO notes (note) VALUES ($1)', ['duplicate']),
        response: response('duplicate'),
      });
      expect(duplicate).toMatchObject({ owned: true, row: { state: 'finished', response: { body: 'duplicate' } } });
      expect(performance.now() - startedAt).toBeLessThan(LEASE_MS + 4000);
      stall();
      expect(await first).toBe('failed');
      expect((await direct.query(`SELECT note FROM ${schema}.notes ORDER BY note`)).rows).toEqual([{ note: 'duplicate' }]);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
      await Promise.all(pools.map((pool) => pool.end()));
      await direct.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await direct.end();
    }
  });
});

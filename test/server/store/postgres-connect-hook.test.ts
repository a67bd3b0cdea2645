/**
 * The app's own `pg.Pool`, with the hook apps give it (`pool.on('connect', (client) =>
 * client.query('SET …'))`): the store's statements never queue a query behind another on one
 * client. `pg` 8 prints a DeprecationWarning into the app's log when they do ("Calling
 * client.query() when the client is already executing a query"), and `pg` 9 removes the queue.
 * The store's probe for a pooler (`postgres-session.node.ts`) used to be sent on the pool's
 * `connect` event, next to the app's hook and ahead of the first statement.
 *
 * In a file of its own: Node prints a deprecation once per process.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';
import { runWholeRequest } from '../../../src/server/store/request-transaction.js';

const withPostgres = await canRunServerTests();
const warnings: string[] = [];
const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
process.on('warning', onWarning);
// The condition pg itself warns on, checked at every call: Node prints a deprecation only once per
// process, so the warning alone could have gone before this file ran.
const queued: string[] = [];
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client & { _queryQueue?: unknown[]; pipeline?: boolean }, ...args: unknown[]) {
  const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | undefined)?.text);
  if (!Array.isArray(this._queryQueue)) queued.push(`pg has no _queryQueue any more: check this test (${text})`);
  else if (this._queryQueue.length > 0 && this.pipeline !== true) queued.push(text);
  return (query as (...rest: unknown[]) => unknown).apply(this, args);
} as typeof query;
afterAll(() => {
  process.off('warning', onWarning);
  pg.Client.prototype.query = query;
});

describe.skipIf(!withPostgres)("the app's pg.Pool with a connect hook, on PostgreSQL", () => {
  it('queues no query behind another on a client: no pg deprecation, and the store still finds its connections direct', async () => {
    const url = await requireServerUrl('connect hook');
    const schema = `oncely_t_hook_${randomBytes(4).toString('hex')}`;
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    pool.on('connect', (client) => void client.query("SET application_name = 'shop'"));
    const store = postgresKeyStore({ pool, schema });
    try {
      await store.migrate();
      // Every path that checks a connection out, on fresh connections and on pooled ones.
      for (let round = 0; round < 3; round += 1) {
        await Promise.all(
          Array.from({ length: 3 }, async (_, i) => {
            const key = `hook-${round}-${i}`;
            const admitted = await runWholeRequest(
              store,
              { clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 30_000, ttlMs: 86_400_000 },
              { work: (tx) => tx.get<{ n: number }>('SELECT $1::int AS n', [i]), response: (row) => ({ status: 201, headers: {}, body: JSON.stringify(row) }) },
            );
            expect(admitted.owned).toBe(true);
            expect(await store.transaction((tx) => tx.get<{ name: string }>('SELECT current_setting($1) AS name', ['application_name']))).toEqual({
              name: 'shop',
            });
          }),
        );
      }
      // A direct connection was recognised: the store's statements are prepared by now.
      const prepared = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'oncely_%'");
      expect(prepared.rows[0]!.n).toBeGreaterThan(0);
      expect(queued).toEqual([]);
      expect(warnings.filter((warning) => warning.includes('already executing a query'))).toEqual([]);
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  });
});

/**
 * The SQL's own bound from Node: the statements oncely's PostgreSQL store sends for the
 * benchmark's payment (`postgres-sql.node.ts`, the same texts: BEGIN with the transaction's
 * settings and the key's admission, the charge, `oncely_point` for EXT1_SENT with COMMIT,
 * `oncely_finish_after` with the response — `bench/pgbench/first-execution-store.sql` sends them
 * from C), sent by `pg` from the same HTTP stack as the oncely peer and nothing else: no
 * fingerprint, no in-flight map, no replay cache, no lease or phase logic. `oncely ÷ this` is what
 * oncely's own code costs; `this ÷ pgbench` what Node, `pg` and HTTP cost for the same SQL.
 *
 * Its pool is pipelined as the store's own (`pg`'s pipeline mode, a round trip's statements in one
 * socket write), its statements prepared; its key table is the store's, migrated by the store.
 *
 * @module
 */
import type pg from 'pg';
import { postgresKeyStore } from '../../src/server/store/postgres.node.js';
import { beginSql } from '../../src/server/store/postgres-session.node.js';
import { postgresSql } from '../../src/server/store/postgres-sql.node.js';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, receiptWork, toCount, type WorkOptions } from './payment.js';

type Pooled = pg.PoolClient & Pick<pg.Client, 'connection'>;

/** A fetch-style app: `POST /pay` runs the statements; `GET /executions` counts charges. */
export interface StatementsApp {
  fetch(request: Request): Promise<Response>;
}

/**
 * Migrates the store's key table into `schema`, creates the charges table, and returns the app
 * over `pool` (created with `pipeline: true` and `search_path` = `schema`).
 *
 * @example
 * ```ts
 * const app = await statementsApp(pool, url, 'bench_1a2b', { workMs: 0, holdMs: 0 });
 * serve({ fetch: app.fetch, port: 0 });
 * ```
 */
export async function statementsApp(pool: pg.Pool, url: string, schema: string, work: WorkOptions, leaseMs: number): Promise<StatementsApp> {
  const store = postgresKeyStore({ connectionString: url, schema });
  await store.migrate().finally(() => store.close());
  await pool.query(`SET search_path = ${schema}; ${EXECUTIONS_DDL}`);
  const SQL = postgresSql(schema);
  const begin = beginSql(schema, 15_000);
  const named = (name: string, text: string, values: unknown[]) => ({ name: `statements_${name}`, text, values });
  /** `send`'s statements in one socket write, as the store's runner sends a round trip. */
  const together = <T>(client: Pooled, send: () => T): T => {
    client.connection.stream.cork();
    try {
      return send();
    } finally {
      client.connection.stream.uncork();
    }
  };
  return {
    async fetch(request) {
      if (request.method === 'GET') return Response.json(toCount((await pool.query(COUNT_SQL)).rows[0]));
      const key = request.headers.get('idempotency-key') ?? crypto.randomUUID();
      const text = await request.text();
      const input = parsePayment(JSON.parse(text) as unknown);
      if (typeof input === 'string') return Response.json({ error: input }, { status: 400 });
      const client = (await pool.connect()) as Pooled;
      let lease: string;
      const payment = newPayment(input);
      try {
        const admitArgs = ['bench', key, 'a'.repeat(64), 'POST /pay', text, leaseMs, 86_400_000];
        const [, admitted] = await Promise.all(together(client, () => [client.query(begin), client.query(named('admit', SQL.admit, admitArgs))]));
        const row = admitted.rows[0] as { owned: boolean; lease: string } | undefined;
        if (!row?.owned) {
          await client.query('ROLLBACK');
          return Response.json({ error: 'duplicate' }, { status: 409 });
        }
        lease = row.lease;
        await client.query(named('charge', CHARGE_SQL, chargeParams(payment)));
        const sent = ['bench', key, lease, 'EXT1_SENT', JSON.stringify({ payment }), leaseMs];
        await Promise.all(together(client, () => [client.query(named('sent', SQL.firstPoint, sent)), client.query('COMMIT')]));
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
      await receiptWork(input, work);
      const body = JSON.stringify(payment);
      await pool.query(named('finish', SQL.finishAfter, ['bench', key, lease, 'EXT1_DONE', '{}', 201, '{"content-type":"application/json"}', body]));
      return new Response(body, { status: 201, headers: { 'content-type': 'application/json' } });
    },
  };
}

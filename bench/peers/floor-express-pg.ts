/**
 * The floor under `oncely/express` with `transaction: true` on PostgreSQL: the same three round
 * trips written by hand with `pg` and nothing else — what the work itself costs a Node process and
 * PostgreSQL, so that the bench can tell oncely's own cost from the cost of the protocol.
 *
 * ```
 * 1  BEGIN; the key's advisory lock unless its row exists; look for the row   (one simple-protocol message)
 * 2  the handler's INSERT                                                    (the app's statement)
 * 3  INSERT the key's row, finished, with the response; COMMIT              (one simple-protocol message)
 * ```
 *
 * Happy path only (a duplicate finds the row and gets its response back; no fingerprint
 * comparison, no in-flight wait, no lease, no size cap, no timeouts): fewer promises than oncely
 * keeps, so a cost at or under the real one. Values are inlined as escaped literals to keep each
 * step one message on a plain pool, as oncely's batches are.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type express from 'express';
import type { Request, Response } from 'express';
import pg from 'pg';
import { baseApp, invalid, type PeerContext } from './express-peers.js';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, receiptWork, toCount } from './payment.js';

const KEYS_DDL = `CREATE TABLE IF NOT EXISTS floor_keys (
  client_id TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL,
  response_status INTEGER NOT NULL, response_body TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (client_id, key))`;

/** A string as a PostgreSQL literal. */
const literal = (value: string): string => pg.escapeLiteral(value);

/**
 * Builds the floor peer on the app's schema.
 *
 * @example
 * ```ts
 * const app = await floorExpressPg(ctx, 'postgres://postgres@127.0.0.1:5432/test', 'bench_1');
 * ```
 */
export async function floorExpressPg(ctx: PeerContext, url: string, schema: string): Promise<express.Express> {
  const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`${EXECUTIONS_DDL}; ${KEYS_DDL}`);
  const app = baseApp(ctx, async () => toCount((await pool.query(COUNT_SQL)).rows[0]));
  app.post('/pay', async (req: Request, res: Response) => {
    const key = req.get('idempotency-key');
    if (!key) return invalid(res, 'Idempotency-Key is required');
    const hash = createHash('sha256').update(JSON.stringify(req.body)).digest('hex');
    const ref = `client_id = 'bench' AND key = ${literal(key)}`;
    const client = await pool.connect();
    try {
      const opened = (await client.query(
        `BEGIN; SELECT CASE WHEN EXISTS (SELECT 1 FROM floor_keys WHERE ${ref}) THEN false ELSE pg_advisory_xact_lock(hashtextextended(${literal(`bench:${key}`)}, 0)) IS NULL END; SELECT response_status, response_body FROM floor_keys WHERE ${ref}`,
      )) as unknown as pg.QueryResult[];
      const found = opened[2]!.rows[0] as { response_status: number; response_body: string } | undefined;
      if (found) {
        await client.query('ROLLBACK');
        res.status(found.response_status).set('idempotency-replay', 'true').type('json').send(found.response_body);
        return;
      }
      const input = parsePayment(req.body);
      if (typeof input === 'string') {
        await client.query('ROLLBACK');
        return invalid(res, input);
      }
      const payment = newPayment(input);
      await client.query(CHARGE_SQL, chargeParams(payment));
      await receiptWork(input, ctx.work);
      const body = JSON.stringify(payment);
      await client.query(`INSERT INTO floor_keys VALUES ('bench', ${literal(key)}, ${literal(hash)}, 201, ${literal(body)}, now() + interval '1 day'); COMMIT`);
      res.status(201).type('json').send(body);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  });
  return app;
}

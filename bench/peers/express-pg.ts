/**
 * The Express peers on PostgreSQL: the same payment route as `express-peers.ts`, its charge in
 * PostgreSQL through the app's own `pg.Pool`, and
 * - with no idempotency layer (the floor: one INSERT, one durable commit per payment);
 * - behind `oncely/express` whose key store (`postgresKeyStore`, the public factory of
 *   `oncely/server/postgres`) shares that pool and schema: by default the handler's INSERT commits
 *   on its own, apart from the stored response; with `transaction: true` it runs through
 *   `req.oncely.tx` and commits with the stored response or not at all.
 *
 * Configured by `serve.ts` (`BENCH_ONCELY_DB`: the `postgres://` URL; `BENCH_PG_SCHEMA`: a schema
 * of the run's own). `BENCH_PG_PIPELINE=1` builds the pool with `pg`'s pipeline mode (what the
 * store's own pool uses); by default it is a plain pool, as an app would make one.
 *
 * @module
 */
import type express from 'express';
import type { Request, Response } from 'express';
import pg from 'pg';
import { idempotent } from '../../src/server/middleware/express.js';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { baseApp, invalid, type PeerContext } from './express-peers.js';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, receiptWork, toCount } from './payment.js';

/** Where the app's PostgreSQL is, and which of the PostgreSQL peers to build. */
export interface ExpressPgOptions {
  readonly url: string;
  readonly schema: string;
  /** `null`: no idempotency layer; else oncely/express, with or without `transaction: true`. */
  readonly oncely: null | { readonly transaction: boolean; readonly leaseMs: number; readonly inFlightWaitMs?: number };
}

/** The app's pool: ten connections (the store's default size), the run's schema first on the search path. */
function appPool(url: string, schema: string): pg.Pool {
  const pipeline = process.env['BENCH_PG_PIPELINE'] === '1';
  return new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}`, ...(pipeline ? { pipeline: true } : {}) } as pg.PoolConfig);
}

/**
 * Builds one of the Express peers on PostgreSQL.
 *
 * @example
 * ```ts
 * const app = await expressPg(ctx, { url: 'postgres://postgres@127.0.0.1:5432/test', schema: 'bench_1', oncely: { transaction: true, leaseMs: 10_000 } });
 * app.listen(0);
 * ```
 */
export async function expressPg(ctx: PeerContext, options: ExpressPgOptions): Promise<express.Express> {
  if (!/^[a-z_][a-z0-9_]*$/.test(options.schema)) throw new Error(`expressPg: schema "${options.schema}" must be lower-case letters, digits and _`);
  const pool = appPool(options.url, options.schema);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`);
  // `charged` counts the charges written, committed or not: the crash scenario's sign that the
  // handler is past its INSERT (an uncommitted row is visible to no reader).
  let charged = 0;
  const app = baseApp(ctx, async () => ({ ...toCount((await pool.query(COUNT_SQL)).rows[0]), charged }));
  if (options.oncely === null) {
    await pool.query(EXECUTIONS_DDL);
    app.post('/pay', async (req: Request, res: Response) => {
      const input = parsePayment(req.body);
      if (typeof input === 'string') return invalid(res, input);
      const payment = newPayment(input);
      await pool.query(CHARGE_SQL, chargeParams(payment));
      charged += 1;
      await receiptWork(input, ctx.work);
      res.status(201).json(payment);
    });
    return app;
  }
  const { transaction, leaseMs, inFlightWaitMs } = options.oncely;
  const store = postgresKeyStore({ pool, schema: options.schema });
  await store.migrate({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
  const guard = idempotent({
    store,
    clientId: () => 'bench',
    leaseMs,
    ...(transaction ? { transaction: true } : {}),
    ...(inFlightWaitMs === undefined ? {} : { inFlightWaitMs }),
  });
  app.post('/pay', guard, async (req: Request, res: Response) => {
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    const payment = newPayment(input);
    if (transaction) await req.oncely!.tx!.run(CHARGE_SQL, chargeParams(payment));
    else await pool.query(CHARGE_SQL, chargeParams(payment));
    charged += 1;
    await receiptWork(input, ctx.work);
    res.status(201).json(payment);
  });
  return app;
}

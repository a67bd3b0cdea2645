/**
 * oncely's Express middleware (`oncely/express`) in front of the same payment route as the other
 * Express peers (`express-peers.ts`): `express.json()`, then `idempotent({ store })`, then the
 * route's handler.
 *
 * Two variants:
 * - **default options**: the handler is the other Express peers' handler, unchanged; its charge
 *   lands in the app database, a commit apart from the stored response. A crash between the two
 *   frees the key after one lease and the retry charges again, as the guard's docs say.
 * - **`transaction: true`**: the handler writes its charge through `req.oncely.tx`, so the charge
 *   commits with the stored response or not at all; the charges then live in the store's file,
 *   next to the keys, as an app on the same database would keep them.
 *
 * @module
 */
import Database from 'better-sqlite3';
import type express from 'express';
import type { Request, Response } from 'express';
import { idempotent } from '../../src/server/middleware/express.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import { baseApp, invalid, type PeerContext } from './express-peers.js';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, receiptWork, runPayment, toCount } from './payment.js';

/** What the oncely Express peer needs beyond {@link PeerContext}. */
export interface OncelyExpressOptions {
  /** The SQLite file of the key store. */
  readonly path: string;
  /** The middleware's `leaseMs` (the scenarios' lease, the same as Powertools' emulated timeout). */
  readonly leaseMs: number;
  /** Run the handler in the store's transaction and charge through `req.oncely.tx`. */
  readonly transaction: boolean;
  /** The middleware's `inFlightWaitMs`; its default when absent. */
  readonly inFlightWaitMs?: number;
}

/**
 * Builds the oncely Express peer over a SQLite key store.
 *
 * @example
 * ```ts
 * const app = await oncelyExpress(ctx, { path: '/tmp/oncely.db', leaseMs: 10_000, transaction: false });
 * app.listen(0);
 * ```
 */
export async function oncelyExpress(ctx: PeerContext, options: OncelyExpressOptions): Promise<express.Express> {
  const store = sqliteKeyStore({ path: options.path });
  await store.migrate(options.transaction ? { sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` } : undefined);
  const guard = idempotent({
    store,
    // One caller, as the other Express peers scope their keys.
    clientId: () => 'bench',
    leaseMs: options.leaseMs,
    ...(options.transaction ? { transaction: true } : {}),
    ...(options.inFlightWaitMs === undefined ? {} : { inFlightWaitMs: options.inFlightWaitMs }),
  });
  if (!options.transaction) {
    const app = baseApp(ctx);
    app.post('/pay', guard, async (req: Request, res: Response) => {
      const input = parsePayment(req.body);
      if (typeof input === 'string') return invalid(res, input);
      res.status(201).json(await runPayment(input, ctx.db, ctx.work));
    });
    return app;
  }

  // The charges are counted on a connection of their own: a held handler keeps the store's
  // write transaction open, and WAL lets a reader see what has committed meanwhile. `charged`
  // counts the charges written (committed or not), so that the crash scenario knows when the
  // handler is past its INSERT: an uncommitted row is visible to no reader.
  const reader = new Database(options.path, { readonly: true });
  const count = reader.prepare(COUNT_SQL);
  let charged = 0;
  const app = baseApp(ctx, () => ({ ...toCount(count.get() as Parameters<typeof toCount>[0]), charged }));
  app.post('/pay', guard, async (req: Request, res: Response) => {
    const input = parsePayment(req.body);
    if (typeof input === 'string') return invalid(res, input);
    const payment = newPayment(input);
    await req.oncely!.tx!.run(CHARGE_SQL, chargeParams(payment));
    charged += 1;
    await receiptWork(input, ctx.work);
    res.status(201).json(payment);
  });
  return app;
}

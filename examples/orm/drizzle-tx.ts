/**
 * Drizzle's own query builder on oncely's `tx` (`req.oncely.tx` with `transaction: true`): a
 * `pg-proxy` database whose one callback runs every statement through `tx`, so `await
 * db.insert(orders).values(…)` commits with the key and the stored response, or not at all.
 *
 * `tx` answers rows as objects in the order of their columns; Drizzle maps a select's rows by
 * position (`'all'`), hence `Object.values`. Two selected columns of the same name (a join's two
 * `id`s) would be one key of that object: alias one (`sql<string>\`${users.id}\`.as('user_id')`).
 */
import type { DrizzleConfig } from 'drizzle-orm';
import { drizzle, type PgRemoteDatabase } from 'drizzle-orm/pg-proxy';
import type { Tx } from '../../src/server/index.js';

/** A Drizzle database whose statements run in `tx`: make one per request, from its `tx`. */
export function drizzleOver<TSchema extends Record<string, unknown> = Record<string, never>>(
  tx: Tx,
  config?: DrizzleConfig<TSchema>,
): PgRemoteDatabase<TSchema> {
  return drizzle(async (sql, params, method) => {
    const rows = await tx.all(sql, params);
    return { rows: method === 'all' ? rows.map((row) => Object.values(row)) : rows };
  }, config);
}

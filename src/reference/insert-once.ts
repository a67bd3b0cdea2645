/**
 * An INSERT that does nothing when its row's unique key is already there, in each dialect: the
 * app's tables are the database's arbitrators (the inbox's event ids, the simulated systems'
 * derived keys), with no read-then-write.
 *
 * @module
 */
import type { Tx } from '../server/store/types.js';

/** MySQL's ER_DUP_ENTRY. */
const DUPLICATE_ENTRY = 1062;

/**
 * Runs `insert` (an `INSERT … VALUES (…)` with `$n` placeholders) unless a row with the same
 * `conflict` key exists; resolves to the rows inserted, 0 or 1. SQLite and PostgreSQL: `ON
 * CONFLICT (…) DO NOTHING`. MySQL: the plain INSERT, its duplicate-key error read as 0 (a failed
 * statement leaves MySQL's transaction open). Not `INSERT IGNORE`, which would also turn a value
 * too long for its column into a cut one, nor `ON DUPLICATE KEY UPDATE k = k`, which counts a
 * duplicate as one row when the connection reports matched rows (mysql2's default).
 *
 * @example
 * ```ts
 * const inserted = await insertOnce(tx, 'INSERT INTO inbox_events (client_id, event_id) VALUES ($1, $2)', 'client_id, event_id', ['acme', 'evt_1']);
 * ```
 */
export async function insertOnce(tx: Tx, insert: string, conflict: string, params: readonly unknown[]): Promise<number> {
  if (tx.dialect !== 'mysql') return tx.run(`${insert} ON CONFLICT (${conflict}) DO NOTHING`, params);
  try {
    return await tx.run(insert, params);
  } catch (error) {
    if ((error as { errno?: unknown }).errno === DUPLICATE_ENTRY) return 0;
    throw error;
  }
}

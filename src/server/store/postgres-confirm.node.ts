/**
 * A finished row is replayed only once the synchronous standby has it.
 *
 * A commit whose wait for the standby was abandoned (`postgres-commit.node.ts`) is visible on the
 * primary at once. The call that made it fails, but the client's retry reads the row and would
 * replay its response: an acknowledgment of a commit that a failover to the standby loses. Nothing
 * in PostgreSQL makes a read wait for replication, so the store commits once more before it hands
 * back a finished row it read: a transaction that writes a WAL message and waits for the standby
 * like any other. The standby confirms WAL in order, so once that commit is confirmed, so is every
 * commit before it, the row's included. While no standby confirms, the replay waits or fails
 * (`CommitUnconfirmedError` if that wait too is cancelled): `503`, never the response.
 *
 * With no synchronous standby named (`synchronous_standby_names` empty: a single server, an
 * asynchronous cluster, PGlite) the statement writes nothing: one round trip. Only rows read from
 * the database pay it; a front end's cache of finished keys holds rows it already saw confirmed.
 *
 * @module
 */
import type { PostgresSql } from './postgres-sql.node.js';
import type { Runner } from './postgres-transport.node.js';

/**
 * `row`, once the standby has everything the primary committed (see the module comment), when it
 * is finished; any other row as it is.
 *
 * @example
 * ```ts
 * const row = await confirmedRow(runner, postgresSql('oncely'), await store.load('acme', 'k1'));
 * ```
 */
export async function confirmedRow<R extends { readonly state: string } | null | undefined>(runner: Runner, SQL: PostgresSql, row: R): Promise<R> {
  if (row?.state === 'finished') await runner.prepared(SQL.confirm, []);
  return row;
}

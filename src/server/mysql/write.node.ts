/**
 * The fenced write (`KeyStore.write`) on MySQL, and the row change every write applies.
 *
 * One transaction:
 *
 * ```
 * START TRANSACTION
 * SELECT recovery_point, data … WHERE (client_id, idem_key) AND state='started' AND lease_token=? FOR UPDATE
 *   └─ no row: the lease is lost. The work still runs, but each of its statements throws; ROLLBACK; { ok: false }
 * (the work's statements: the row lock is held, so no takeover can happen until COMMIT)
 * UPDATE … SET (planWrite's columns) WHERE … AND lease_token=?    (or the DELETE of a forgotten row)
 * COMMIT
 * ```
 *
 * The row lock, taken before the work's first statement, is the fence: a takeover is an UPDATE of
 * the same row, and waits for this COMMIT. Whether the write landed is told by that lock, not by
 * the UPDATE's `affectedRows`, which counts rows changed or rows matched depending on the
 * connection's `CLIENT_FOUND_ROWS` flag (mysql2 sets it by default; a caller's pool may not).
 *
 * @module
 */
import type { PoolConnection } from 'mysql2/promise';
import { LeaseLostError, planWrite, type Fenced, type Lease, type RowChange, type Tx, type WriteChange } from '../store.js';
import { execute, inTransaction, type Connections } from './connection.node.js';
import { NOW_MS, type Statements } from './sql.js';
import { openTx } from './tx.js';

/** What a write needs of its store. */
export interface WriteContext {
  readonly connections: Connections;
  readonly sql: Statements;
  readonly maxResponseBytes: number;
}

/**
 * Applies `change` to the row `lease` holds, inside the caller's transaction, the row already
 * locked by it (`current`: its point and data as read then): the DELETE of a forgotten row with
 * no recovery point yet, else one UPDATE of the columns the change names.
 */
export async function applyChange(
  conn: PoolConnection,
  sql: Statements,
  lease: Lease,
  current: { readonly data: string; readonly recovery_point: string | null },
  change: RowChange,
): Promise<void> {
  const fence = [lease.clientId, lease.key, lease.token];
  if (change.deleteIfNoPoint && current.recovery_point === null) {
    await execute(conn, sql.forget, fence);
    return;
  }
  const set: string[] = [];
  const params: unknown[] = [];
  const assign = (column: string, value: unknown, expression = '?'): void => {
    set.push(`${column} = ${expression}`);
    params.push(value);
  };
  if (change.recoveryPoint !== undefined) assign('recovery_point', change.recoveryPoint);
  if (Object.keys(change.data).length > 0) assign('data', JSON.stringify({ ...(JSON.parse(current.data) as object), ...change.data }));
  if (change.response !== undefined) {
    assign('response', JSON.stringify(change.response));
    // A key that finished late keeps its whole retention from its finish.
    set.push(`state = 'finished'`, `expires_at = ${NOW_MS} + (expires_at - created_at)`);
  }
  if (change.retryAfterMs !== undefined) {
    set.push('attempts = attempts + 1');
    assign('next_attempt_at', change.retryAfterMs, `${NOW_MS} + ?`);
  }
  if (change.leaseMs === null) set.push('lease_token = NULL', 'lease_until = NULL');
  else assign('lease_until', change.leaseMs, `${NOW_MS} + ?`);
  await execute(conn, sql.update(set), [...params, ...fence]);
}

/** `KeyStore.write`: the work and the change in one transaction, fenced by the row lock. */
export async function fencedWrite<T>(ctx: WriteContext, lease: Lease, change: WriteChange<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>> {
  if (work && (change.kind === 'release' || change.kind === 'park')) throw new TypeError(`mysqlKeyStore: a '${change.kind}' write takes no work`);
  const limits = { store: 'mysqlKeyStore', key: lease.key, maxResponseBytes: ctx.maxResponseBytes };
  const lost = new LeaseLostError({ message: `mysqlKeyStore: the lease on ${JSON.stringify(lease.key)} no longer holds the row` });
  return ctx.connections
    .use((conn) =>
      inTransaction(conn, async (): Promise<Fenced<T | undefined>> => {
        const locked = await execute(conn, ctx.sql.lock, [lease.clientId, lease.key, lease.token]);
        const current = (locked as { data: string; recovery_point: string | null }[])[0];
        const open = openTx(conn, () => (current ? undefined : lost));
        let result: T | undefined;
        try {
          result = work ? await work(open.tx) : undefined;
        } finally {
          await open.end();
        }
        if (open.failure !== undefined) throw open.failure;
        if (!current) throw lost;
        await applyChange(conn, ctx.sql, lease, current, planWrite(change, result, limits));
        return { ok: true, value: result };
      }),
    )
    .catch((error: unknown) => {
      if (error === lost) return { ok: false } as const;
      throw error;
    });
}

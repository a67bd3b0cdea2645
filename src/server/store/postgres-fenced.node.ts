/**
 * PostgreSQL's transport for the store core's fenced writes (`fencedWrite` in `core.ts`): the
 * work's first statement goes in one round trip with BEGIN and `oncely_lock`, later ones in the
 * open transaction, and the write's own statement with COMMIT (or alone when the work ran none).
 *
 * @module
 */
import type { FencedSession, TxOp } from './core.js';
import type { OpenTransaction, QueryResult, Runner, Statement } from './postgres-transport.node.js';
import type { PostgresSql } from './postgres-sql.node.js';
import { LeaseLostError, isLeaseLost } from './lease-lost.js';
import type { Lease, StoredResponse } from './types.js';

/** The lease's fence arguments (`$1, $2, $3` of every fenced statement). */
export const fenceArgs = (lease: Lease): string[] => [lease.clientId, lease.key, lease.token];

/** What `op` asks of a result. */
export const shaped = (op: TxOp, result: QueryResult<unknown>): unknown => (op === 'run' ? result.rowCount : op === 'all' ? result.rows : result.rows[0]);

/**
 * One fenced write's session over `runner`. The transaction opens only when the work runs its
 * first statement, which goes in the same round trip as BEGIN and `oncely_lock` (`SELECT … FOR
 * UPDATE` of the row under the lease, raising OLOST when the lease no longer holds it: the
 * transaction is then aborted before the statement behind it runs, so an owner that lost its row
 * runs none of its statements, with no wait for the check; a concurrent takeover waits for this
 * transaction, then finds a fresh lease). (As on SQLite, the JS the work runs before its first
 * statement is not fenced; only what reaches the database is.) The transaction holds the row's
 * lock: idle longer than `idleMs` (its process frozen) PostgreSQL ends it, so a takeover after the
 * lease is not kept waiting by an owner that will never commit.
 *
 * @example
 * ```ts
 * const session = pgSession(runner, postgresSql('oncely'), lease, 30_000);
 * ```
 */
export function pgSession(runner: Runner, SQL: PostgresSql, lease: Lease, idleMs: number | undefined): FencedSession<Statement> {
  let open: OpenTransaction | undefined;
  let opening: Promise<OpenTransaction> | undefined;
  // The work sees a lost lease as the one LeaseLostError, whichever statement raised OLOST.
  const fencedOut = (error: unknown): never => {
    throw isLeaseLost(error) && !(error instanceof LeaseLostError) ? new LeaseLostError({ cause: error }) : error;
  };
  return {
    async open(op, sql, params) {
      const opened = runner.open({ sql: SQL.lock, params: fenceArgs(lease) }, { sql, params }, { idleTimeoutMs: idleMs });
      opening = opened.then(({ tx }) => (open = tx));
      // Its failure reaches the work through `opened`; it is awaited again when the work ends.
      opening.catch(() => undefined);
      const { then } = await opened.catch(fencedOut);
      if (then?.status === 'rejected') throw then.reason;
      return shaped(op, then!.value);
    },
    async query(op, sql, params) {
      const tx = await opening!.catch(fencedOut);
      return shaped(op, await tx.query(sql, params));
    },
    async commit(statement) {
      // Awaited again: a work that caught the failure of its first statement (a lost lease, a
      // broken connection) must not get its write committed without it.
      const tx = await opening!;
      await tx.commit(statement);
    },
    async alone(statement) {
      await runner.prepared(statement.sql, statement.params);
    },
    async rollback() {
      // The work may fail while its first statement's BEGIN is still on the wire: wait for it, or
      // that transaction (and the row lock it takes) would never end.
      await opening?.catch(() => undefined);
      await open?.rollback();
    },
  };
}

/**
 * Whether the row is at `point` under `lease`: a write whose answer was lost did commit.
 *
 * @example
 * ```ts
 * const committed = await landed(runner, postgresSql('oncely'), lease, 'H1_DONE');
 * ```
 */
export async function landed(runner: Runner, SQL: PostgresSql, lease: Lease, point: string): Promise<boolean> {
  try {
    const { rows } = await runner.prepared(SQL.landed, [...fenceArgs(lease), point]);
    return rows.length === 1;
  } catch {
    return false;
  }
}

/**
 * Whether a whole request's COMMIT, whose answer was lost, landed: the key is finished for
 * `requestHash` with exactly `stored`. Whether this transaction or another owner's (this one
 * rolled back, a duplicate of the same request ran) committed it, the stored response is the
 * answer its retry would replay, byte for byte: sending it is right either way. A row finished
 * with another response, or none, says the COMMIT did not land.
 *
 * @example
 * ```ts
 * const committed = await landedFinish(runner, postgresSql('oncely'), lease, 'h', { status: 201, headers: {}, body: '{}' });
 * ```
 */
export async function landedFinish(runner: Runner, SQL: PostgresSql, lease: Lease, requestHash: string, stored: StoredResponse): Promise<boolean> {
  try {
    const { rows } = await runner.prepared(SQL.landedFinish, [
      lease.clientId,
      lease.key,
      requestHash,
      stored.status,
      JSON.stringify(stored.headers),
      stored.body,
    ]);
    return rows.length === 1;
  } catch {
    return false;
  }
}

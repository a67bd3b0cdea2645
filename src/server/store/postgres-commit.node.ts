/**
 * How a store transaction's COMMIT is sent and judged on a `pg` connection: a COMMIT PostgreSQL
 * answered with ROLLBACK is a failure, and so is one it says was not confirmed by the synchronous
 * standby it waited for.
 *
 * With `synchronous_standby_names` set, a COMMIT writes its WAL locally, then waits for a standby.
 * That wait cannot be undone, only abandoned: cancelled (`pg_cancel_backend`, a pooler's cancel),
 * PostgreSQL answers the COMMIT with success and a WARNING (SQLSTATE `01000`, "canceling wait for
 * synchronous replication due to user request … The transaction has already committed locally,
 * but might not have been replicated to the standby"); ended (`pg_terminate_backend`, a fast
 * shutdown of the primary), it sends a WARNING with SQLSTATE `57P01` before the session dies, and
 * the transaction is visible on that primary from then on. Either way a failover to the standby
 * loses it. `statement_timeout` never does this: PostgreSQL (13 and later) disarms it before the
 * commit, so a COMMIT waiting for a standby is bounded only by the client's own timeout, which
 * drops the connection and leaves the transaction waiting, invisible, until a standby confirms it.
 *
 * The warning comes before the COMMIT's answer, as a `notice` event on the connection; it is the
 * only sign. The message may be translated (`lc_messages`), so the SQLSTATE decides: any WARNING
 * `01000` or `57P01` heard during a statement that commits makes that commit unconfirmed. (An
 * application's deferred trigger that raises a plain WARNING at COMMIT is then reported unknown
 * too: failing closed costs its client a retry, which replays the stored response.)
 *
 * PGlite has no replication: a COMMIT there never waits, and nothing is watched.
 *
 * @module
 */
import type pg from 'pg';
import { commitBatch, type BatchDriver, type BatchStatement } from './postgres-batch.node.js';
import { CommitUnconfirmedError } from './unconfirmed-commit.js';

/** A settled answer's value, or its failure thrown. */
export const valueOf = <T>(settled: PromiseSettledResult<T>): T => {
  if (settled.status === 'rejected') throw settled.reason;
  return settled.value;
};

/** A pooled connection as `pg` makes it: a `Client`, with its wire connection. */
type Corked = pg.ClientBase & Pick<pg.Client, 'connection'>;

/**
 * Statements `send` issues on a pipelined `client`, written to the socket at once: `pg` writes
 * each query of a pipeline on its own, and a round trip of three statements would otherwise
 * cost three writes and as many packets.
 *
 * @example
 * ```ts
 * const [a, b] = together(pgClient, () => [pgClient.query('SELECT 1'), pgClient.query('SELECT 2')]);
 * ```
 */
export function together<T>(client: Corked, send: () => T): T {
  const { stream } = client.connection;
  stream.cork();
  try {
    return send();
  } finally {
    stream.uncork();
  }
}

/**
 * Throws unless COMMIT committed: PostgreSQL answers the COMMIT of a failed transaction with
 * ROLLBACK and no error (a work that caught the failure of one of its statements).
 *
 * @example
 * ```ts
 * committed(await pgClient.query('COMMIT'));
 * ```
 */
export const committed = (result: pg.QueryResult | pg.QueryResult[]): void => {
  const command = (Array.isArray(result) ? result.at(-1) : result)?.command;
  if (command !== 'COMMIT') throw new Error(`pgRunner: the transaction was rolled back (${command ?? 'no answer'} to COMMIT)`);
};

/** Releases a transaction's connection (destroyed when `failure` is given). */
type End = (sql?: string, failure?: unknown) => Promise<void>;

/** The SQLSTATEs of PostgreSQL's warnings for an abandoned wait for a synchronous standby (`syncrep.c`). */
const ABANDONED_WAIT = new Set(['01000', '57P01']);

/** What the store reads of a notice `pg` emits. */
interface Notice {
  readonly code?: string | undefined;
  readonly message?: string | undefined;
  readonly detail?: string | undefined;
}

/** What a watch heard: the error to throw instead of the commit's success, or `undefined`. */
export type CommitWatch = () => CommitUnconfirmedError | undefined;

/**
 * Watches `client` for the warning of an abandoned replication wait until the returned function is
 * called (once or more: the first call stops the watch, every call answers the same).
 *
 * @example
 * ```ts
 * const heard = watchCommit(pgClient);
 * const result = await pgClient.query('COMMIT');
 * const unconfirmed = heard();
 * if (unconfirmed) throw unconfirmed;
 * ```
 */
export function watchCommit(client: pg.ClientBase): CommitWatch {
  let warning: Notice | undefined;
  let stopped = false;
  const onNotice = (notice: Notice): void => {
    if (warning === undefined && ABANDONED_WAIT.has(notice.code ?? '')) warning = notice;
  };
  client.on('notice', onNotice);
  let answer: CommitUnconfirmedError | undefined;
  return () => {
    if (!stopped) {
      stopped = true;
      client.off('notice', onNotice);
      if (warning !== undefined) {
        const detail = warning.detail ? ` (${warning.detail})` : '';
        answer = new CommitUnconfirmedError(
          `pgRunner: PostgreSQL abandoned the COMMIT's wait for its synchronous standby: ${warning.message}${detail}; the outcome is unknown until a retry`,
          { cause: warning },
        );
      }
    }
    return answer;
  };
}

/**
 * `run`'s answer, unless a watch of `client` heard the COMMIT abandoned: then its error, also in
 * place of `run`'s own failure (a session ended by the abandoned wait).
 *
 * @example
 * ```ts
 * await watched(pgClient, () => pgClient.query('COMMIT'));
 * ```
 */
export async function watched<T>(client: pg.ClientBase, run: () => Promise<T>): Promise<T> {
  const heard = watchCommit(client);
  let result: T;
  try {
    result = await run();
  } catch (error) {
    throw heard() ?? error;
  }
  const unconfirmed = heard();
  if (unconfirmed) throw unconfirmed;
  return result;
}

/**
 * `last` and COMMIT written together on a pipelined `client`, then `end`: a failed `last` leaves
 * the transaction aborted, and the COMMIT behind it ends it (answered ROLLBACK: thrown).
 *
 * @example
 * ```ts
 * await commitPipelined(pgClient, () => pgClient.query('SELECT 1'), end);
 * ```
 */
export async function commitPipelined(client: Corked, last: () => Promise<unknown>, end: End): Promise<void> {
  // Heard before the connection goes back to the pool, where another request's notices arrive.
  const heard = watchCommit(client);
  const [wrote, ending] = await Promise.allSettled(together(client, () => [last(), client.query('COMMIT')]));
  const unconfirmed = heard();
  await end(undefined, ending.status === 'rejected' ? ending.reason : undefined);
  if (unconfirmed) throw unconfirmed;
  valueOf(wrote);
  committed(valueOf(ending));
}

/**
 * `commitBatch` (`last` and COMMIT in one batch, on a connection that is not pipelined), watched.
 *
 * @example
 * ```ts
 * await commitBatchWatched(pgClient, pgModule as BatchDriver, { sql: 'SELECT 1', params: [] }, end);
 * ```
 */
export async function commitBatchWatched(client: pg.ClientBase, driver: BatchDriver, last: BatchStatement, end: End): Promise<void> {
  const heard = watchCommit(client);
  await commitBatch(client, driver, last, (sql, failure) => (heard(), end(sql, failure))).catch((error: unknown) => {
    throw heard() ?? error;
  });
  const unconfirmed = heard();
  if (unconfirmed) throw unconfirmed;
}

/**
 * The application's {@link Tx} on one of the store's open transactions: `$n` (or `?`)
 * placeholders, run as prepared statements (`execute`: the parameters never pass through the
 * client's escaping, which `NO_BACKSLASH_ESCAPES` would make wrong).
 *
 * A statement is refused once its transaction has ended (a work that sends one after it returned
 * must not have it run in the next user's transaction, or in autocommit), and while the
 * transaction's fence does not hold (`refuse`). An error that ended the transaction on the
 * server (a deadlock rolls it all back) is remembered, so that the store rejects the write even
 * if the work swallowed it: after it, MySQL would run the next statements outside any
 * transaction.
 *
 * @module
 */
import type { PoolConnection, ResultSetHeader } from 'mysql2/promise';
import type { Tx } from '../store.js';
import { endsTransaction, execute } from './connection.node.js';
import { toQuestionMarks } from './placeholders.js';

/** A {@link Tx} with the handle its store ends it by. */
export interface OpenTx {
  readonly tx: Tx;
  /** Refuses statements from now on, then waits for those already sent. */
  end(): Promise<void>;
  /** The error that ended the transaction on the server, if one did. */
  readonly failure: unknown;
}

/**
 * A Tx on `conn`'s open transaction. `refuse()`, checked before each statement, answers the error
 * to throw instead of running it (the lease is lost), or `undefined`; `translate` turns a failed
 * statement's error into the one the work gets.
 */
export function openTx(
  conn: PoolConnection,
  refuse: () => Error | undefined = () => undefined,
  translate: (error: unknown) => unknown = (error) => error,
): OpenTx {
  let ended = false;
  let failure: unknown;
  const pending = new Set<Promise<unknown>>();
  const send = async (sql: string, params: readonly unknown[] | undefined): Promise<unknown> => {
    if (ended) throw new Error('mysqlKeyStore: this transaction has ended; a statement sent after its work returned is not run');
    if (failure !== undefined) throw failure;
    const refused = refuse();
    if (refused) throw refused;
    const statement = toQuestionMarks(sql, params);
    const sent = execute(conn, statement.sql, statement.params).then(
      (result) => result,
      (error: unknown) => {
        const told = translate(error);
        if (endsTransaction(error)) failure ??= told;
        throw told;
      },
    );
    pending.add(sent);
    void sent.catch(() => undefined).finally(() => pending.delete(sent));
    return sent;
  };
  const rows = (result: unknown): Record<string, unknown>[] => (Array.isArray(result) ? (result as Record<string, unknown>[]) : []);
  const tx: Tx = {
    dialect: 'mysql',
    run: async (sql, params) => {
      const result = await send(sql, params);
      return Array.isArray(result) ? result.length : (result as ResultSetHeader).affectedRows;
    },
    all: async <T extends object>(sql: string, params?: readonly unknown[]) => rows(await send(sql, params)) as T[],
    get: async <T extends object>(sql: string, params?: readonly unknown[]) => rows(await send(sql, params))[0] as T | undefined,
  };
  return {
    tx,
    async end() {
      ended = true;
      await Promise.allSettled([...pending]);
    },
    get failure() {
      return failure;
    },
  };
}

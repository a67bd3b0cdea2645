/**
 * The runner over an in-process PGlite (tests on machines without a PostgreSQL server, embedded
 * use): the same {@link Runner} contract as the `pg` pool's, in `postgres-runner.node.ts`.
 *
 * @module
 */
import type { OpenTransaction, Opened, Query, Runner, Statement } from './postgres-transport.node.js';

/**
 * The part of a PGlite instance the store uses (structural, so `@electric-sql/pglite` stays a
 * development dependency of this package).
 *
 * @example
 * ```ts
 * import { PGlite } from '@electric-sql/pglite';
 * const pglite: PgliteLike = await PGlite.create();
 * const store = postgresKeyStore({ pglite, schema: 'oncely' });
 * ```
 */
export interface PgliteLike extends PgliteQueryable {
  transaction<T>(work: (tx: PgliteQueryable) => Promise<T>): Promise<T>;
}

/**
 * A PGlite instance or transaction: `query` runs one statement, `exec` a script.
 *
 * @example
 * ```ts
 * const run = (db: PgliteQueryable) => db.query('SELECT 1 AS one');
 * ```
 */
export interface PgliteQueryable {
  query<T>(sql: string, params?: unknown[]): Promise<PgliteResults<T>>;
  exec(sql: string): Promise<Array<PgliteResults<unknown>>>;
}

/**
 * PGlite's result shape (the fields the store reads).
 *
 * @example
 * ```ts
 * const changed = (result: PgliteResults<unknown>) => result.affectedRows ?? 0;
 * ```
 */
export interface PgliteResults<T> {
  rows: T[];
  affectedRows?: number;
}

/** How an open PGlite transaction is told to roll back. */
const ROLLED_BACK = Symbol('rolled back');

/**
 * A runner over PGlite. PGlite is one single-user backend: its own transaction lock queues every
 * other query until a transaction ends, so interleaved async work cannot leak into it. Several
 * stores (schemas) may share one instance, so each transaction sets its own `search_path`: the
 * app's unqualified SQL runs only inside transactions, the store's own SQL names its schema.
 */
export function createPgliteRunner(db: PgliteLike, schema: string): Runner {
  const over =
    (target: PgliteQueryable): Query =>
    async <T>(sql: string, params?: readonly unknown[]) => {
      const result = params === undefined ? (await target.exec(sql)).at(-1) : await target.query<T>(sql, [...params]);
      const rows = (result?.rows ?? []) as T[];
      return { rows, rowCount: result?.affectedRows ?? rows.length };
    };
  const transaction = <T>(work: (query: Query) => Promise<T>): Promise<T> =>
    db.transaction(async (tx) => {
      await tx.query(`SET LOCAL search_path = ${schema}, public`);
      return work(over(tx));
    });
  // Outside a transaction each statement commits on its own.
  const alone = over(db);
  return {
    query: alone,
    prepared: alone,
    // PGlite has one backend and no round trips to save: the open transaction is a PGlite
    // transaction held open until commit or rollback says how it ends.
    open: async <T>(first: Statement, then?: Statement) => {
      let settle!: (last: Statement | undefined) => void;
      const ending = new Promise<Statement | undefined>((resolve) => (settle = resolve));
      return new Promise<Opened<T>>((resolve, reject) => {
        let opened = false;
        const done = transaction(async (query) => {
          const result = await query<T>(first.sql, first.params);
          const followed = then && (await Promise.allSettled([query(then.sql, then.params)]))[0];
          let ended = false;
          const end = (last: Statement | undefined): boolean => {
            if (ended) return false;
            ended = true;
            settle(last);
            return true;
          };
          opened = true;
          resolve({
            result,
            then: followed,
            tx: {
              query,
              async commit(last) {
                if (!end(last)) throw new Error('pgliteRunner: this transaction has ended');
                await done;
              },
              async rollback() {
                if (end(undefined)) await done.catch(() => undefined);
              },
            },
          });
          const last = await ending;
          if (!last) throw ROLLED_BACK;
          return query(last.sql, last.params);
        });
        done.catch((error: unknown) => {
          if (!opened) reject(error);
        });
      });
    },
    transaction,
    close: async () => undefined,
  };
}

/**
 * Knex's own query builder on oncely's `tx` (`req.oncely.tx` with `transaction: true`): Knex
 * compiles (`toSQL().toNative()`: PostgreSQL's `$1` placeholders), `tx` runs, so the statement
 * commits with the key and the stored response, or not at all. Knex has no documented seam for a
 * connection of someone else's, so it compiles and `tx` runs.
 */
import knex, { type Knex } from 'knex';
import type { Tx } from '../../src/server/index.js';

/** Knex's query builder, compiling only: no connection, no pool. */
export const qb: Knex = knex({ client: 'pg' });

/** A query Knex can compile: a query builder or `qb.raw(…)`. */
type Compilable = { toSQL(): { toNative(): Knex.SqlNative } };

/** Runs each compiled query in `tx`, as `tx`'s own `run`, `all` and `get` do. */
export function knexOver(tx: Tx) {
  const native = (query: Compilable) => query.toSQL().toNative();
  return {
    /** An INSERT, UPDATE or DELETE: the number of rows it changed. */
    run: (query: Compilable): Promise<number> => {
      const { sql, bindings } = native(query);
      return tx.run(sql, bindings);
    },
    /** A query's rows (a SELECT, or a write with `.returning(…)`). */
    all: <T extends object>(query: Compilable): Promise<T[]> => {
      const { sql, bindings } = native(query);
      return tx.all<T>(sql, bindings);
    },
    /** A query's first row. */
    get: <T extends object>(query: Compilable): Promise<T | undefined> => {
      const { sql, bindings } = native(query);
      return tx.get<T>(sql, bindings);
    },
  };
}

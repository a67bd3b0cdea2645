/**
 * Kysely's own query builder on oncely's `tx` (`req.oncely.tx` with `transaction: true`): a
 * dialect whose single connection executes through `tx`, so `await db.insertInto('orders')…`
 * commits with the key and the stored response, or not at all.
 *
 * The request is already the transaction: `db.transaction()` is refused rather than nested. A
 * write without `RETURNING` runs as `tx.run`, so Kysely still reports the rows it changed.
 */
import {
  DeleteQueryNode,
  InsertQueryNode,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  UpdateQueryNode,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import type { Tx } from '../../src/server/index.js';

/** An INSERT, UPDATE or DELETE without `RETURNING`: what it returns is a count, not rows. */
function countsRows(query: CompiledQuery): boolean {
  const node = query.query;
  return (InsertQueryNode.is(node) || UpdateQueryNode.is(node) || DeleteQueryNode.is(node)) && node.returning === undefined;
}

class TxConnection implements DatabaseConnection {
  constructor(private readonly tx: Tx) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (countsRows(query)) return { rows: [], numAffectedRows: BigInt(await this.tx.run(query.sql, query.parameters)) };
    return { rows: await this.tx.all<R & object>(query.sql, query.parameters) };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('oncely tx: streaming is not supported; select the rows with execute()');
  }
}

const nested = (): Promise<void> => Promise.reject(new Error('oncely tx: the handler already runs in the request’s transaction; write through db itself'));

class TxDriver implements Driver {
  constructor(private readonly tx: Tx) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return new TxConnection(this.tx);
  }
  beginTransaction = nested;
  commitTransaction = nested;
  rollbackTransaction = nested;
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** A Kysely instance whose statements run in `tx`: make one per request, from its `tx`. */
export function kyselyOver<DB>(tx: Tx): Kysely<DB> {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new TxDriver(tx),
      createQueryCompiler: () => new PostgresQueryCompiler(),
      createIntrospector: (db) => new PostgresIntrospector(db),
    },
  });
}

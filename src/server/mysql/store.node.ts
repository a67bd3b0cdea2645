/**
 * `mysqlKeyStore`: the KeyStore contract on MySQL 8 or MariaDB 10.11 (InnoDB), over `mysql2`.
 * Written from `oncely/server/store` alone, as a third party would write a store: it imports no
 * other module of oncely. Admission: `./admit.node.ts`; the fenced write: `./write.node.ts`; the
 * statements and the table: `./sql.ts`; the connections: `./connection.node.ts`.
 *
 * It has no `beginRequest`: a whole request (`transaction: true`) is an admission whose
 * transaction stays open for the request's work, which the core runs through `admit`. Nor a
 * `watch`: a duplicate waiting for an answer polls the row.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import type { AppSchema, KeyStore, Tx } from '../store.js';
import { admitOn, loadOn } from './admit.node.js';
import { connectionsOver, execute, inTransaction } from './connection.node.js';
import { statementsOf } from './placeholders.js';
import { keyRowOf, type RawRow } from './rows.js';
import { identifier, statementsFor } from './sql.js';
import { openTx } from './tx.js';
import { fencedWrite } from './write.node.js';

/** Options of {@link mysqlKeyStore}: a `pool` of your own, or a `uri` the store opens a pool on. */
export type MysqlKeyStoreOptions = ({ readonly pool: Pool; readonly uri?: never } | { readonly uri: string; readonly pool?: never }) & {
  /**
   * The database (schema) that holds the key table; it must be the one the app's tables are in
   * when the app's steps write them in the key's transaction (they are, on one connection).
   * @default the connection's current database
   * @example 'payments'
   */
  readonly database?: string | undefined;
  /**
   * The key table's name.
   * @default 'oncely_keys'
   */
  readonly table?: string | undefined;
  /**
   * The largest final response stored, in UTF-8 bytes (status line, headers and body as stored):
   * a larger one is refused and nothing of its write commits.
   * @default 65536
   */
  readonly maxResponseBytes?: number | undefined;
};

/**
 * A key store on MySQL 8 or MariaDB 10.11. Each connection it uses is set to READ COMMITTED; its
 * clock is the database's. `close()` ends the pool it opened from `uri`, never one you passed.
 *
 * @example
 * ```ts
 * import { mysqlKeyStore } from 'oncely/server/mysql';
 *
 * const store = mysqlKeyStore({ uri: 'mysql://app:secret@db.internal:3306/payments' });
 * await store.migrate?.({ mysql: 'CREATE TABLE IF NOT EXISTS payments (id VARCHAR(64) PRIMARY KEY, amount INT NOT NULL)' });
 * ```
 */
export function mysqlKeyStore(options: MysqlKeyStoreOptions): KeyStore {
  const table = [options.database === undefined ? [] : [identifier(options.database, 'database')], identifier(options.table ?? 'oncely_keys', 'table')]
    .flat()
    .join('.');
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1) throw new TypeError('mysqlKeyStore: maxResponseBytes must be a positive integer');
  const connections = connectionsOver(options.pool ? { pool: options.pool } : { uri: options.uri! });
  const sql = statementsFor(table);
  const ctx = { connections, sql, maxResponseBytes };
  const rows = async (text: string): Promise<ReturnType<typeof keyRowOf>[]> =>
    connections.use(async (conn) => ((await conn.query(text))[0] as RawRow[]).map(keyRowOf));
  const count = (n: number, what: string): number => {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`mysqlKeyStore: ${what} must be a non-negative integer`);
    return n;
  };

  return {
    dialect: 'mysql',
    maxResponseBytes,
    migrate: (app?: AppSchema) =>
      connections.use(async (conn) => {
        await conn.query(sql.createTable);
        if (app === undefined) return;
        const script = Object.hasOwn(app, 'mysql') ? app['mysql'] : undefined;
        if (typeof script !== 'string')
          throw new TypeError(`mysqlKeyStore.migrate: the app schema has no 'mysql' script (it has: ${Object.keys(app).join(', ') || 'none'})`);
        for (const statement of statementsOf(script)) await conn.query(statement);
      }),
    admit: (input, first) => admitOn(ctx, input, first),
    load: (clientId, key) => connections.use((conn) => loadOn(conn, sql, clientId, key)),
    takeOver: (clientId, key, leaseMs) =>
      connections.use(async (conn) => {
        const token = randomUUID();
        const result = await execute(conn, sql.takeOver, [token, leaseMs, clientId, key]);
        // The token is new, so a matched row is a changed row whatever CLIENT_FOUND_ROWS says.
        return (result as { affectedRows: number }).affectedRows === 1 ? { clientId, key, token } : null;
      }),
    write: (lease, change, work) => fencedWrite(ctx, lease, change, work),
    sweep: (limit) => rows(sql.sweep(count(limit, 'sweep(limit)'))),
    reap: (batchSize) =>
      connections.use(async (conn) => {
        const [result] = await conn.query(sql.reap(count(batchSize, 'reap(batchSize)')));
        return (result as { affectedRows: number }).affectedRows;
      }),
    transaction: <T>(work: (tx: Tx) => Promise<T>) =>
      connections.use((conn) =>
        inTransaction(conn, async () => {
          const open = openTx(conn);
          try {
            const value = await work(open.tx);
            await open.end();
            if (open.failure !== undefined) throw open.failure;
            return value;
          } finally {
            await open.end();
          }
        }),
      ),
    close: () => connections.close(),
  };
}

/**
 * The key store `oncely serve` runs on, from its flags: an SQLite file (`--db PATH`), PostgreSQL
 * (`--db postgres://…` and the `--pg-*` flags), or MySQL / MariaDB (`--mysql-url mysql://…`).
 * Each database's module (and its driver) is loaded only when asked for.
 *
 * @module
 */
import { resolve as resolvePath } from 'node:path';
import type { KeyStore } from '../server/store/types.js';
import { schemaFromUrl } from '../server/store/postgres-url.node.js';
import { sqliteKeyStore } from '../server/store/sqlite.node.js';
import { redacted } from './serve-postgres.js';

export const isPostgres = (db: string): boolean => /^postgres(ql)?:\/\//.test(db);
export const isMysql = (db: string): boolean => /^mysql:\/\//.test(db);

/**
 * The database `--db` (or `--mysql-url`) names: a URL as given, or an SQLite file made absolute
 * against the working directory, as SQLite itself would open it, so the startup line says exactly
 * which file a relative or default `--db` meant.
 */
export function resolveDb(db: string): string {
  return isPostgres(db) || isMysql(db) || db === ':memory:' ? db : resolvePath(db);
}

/** The startup line's account of the database, e.g. `SQLite database /srv/oncely-server.db`. */
export function describeDb(db: string, schema: string | undefined): string {
  if (isPostgres(db)) return `PostgreSQL database ${redacted(db)}, schema ${schema ?? schemaFromUrl(db) ?? 'public'}`;
  if (isMysql(db)) return `MySQL database ${redacted(db)}`;
  return db === ':memory:' ? 'SQLite database in memory (gone on exit)' : `SQLite database ${db}`;
}

/** The `--pg-*` settings of a PostgreSQL store. */
export interface PgFlags {
  readonly schema: string | undefined;
  readonly listenUrl: string | undefined;
  readonly prepared: boolean | undefined;
}

/** The store on `db` (see the module comment). */
export async function openStore(db: string, options: PgFlags): Promise<KeyStore> {
  if (isMysql(db)) {
    // Loaded only for --mysql-url, so no other server loads `mysql2`.
    const { mysqlKeyStore } = await import('../server/mysql.js');
    return mysqlKeyStore({ uri: db });
  }
  if (!isPostgres(db)) return sqliteKeyStore({ path: db });
  let module: typeof import('../server/store/postgres.node.js');
  try {
    // Loaded only for a postgres:// URL, so an SQLite-only server never loads `pg`.
    module = await import('../server/store/postgres.node.js');
  } catch (error) {
    throw new Error(`--db ${redacted(db)}: the PostgreSQL key store is not available in this build (${String(error)})`);
  }
  return module.postgresKeyStore({
    connectionString: db,
    ...(options.schema === undefined ? {} : { schema: options.schema }),
    ...(options.listenUrl === undefined ? {} : { listenUrl: options.listenUrl }),
    ...(options.prepared === undefined ? {} : { preparedStatements: options.prepared }),
  });
}

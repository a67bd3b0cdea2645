/**
 * The SQLite key store (`oncely/server/sqlite`): the embedded default, on better-sqlite3 (an
 * optional peer dependency: `npm install better-sqlite3@12`). Node only.
 *
 * @module
 */
export { sqliteKeyStore, type SqliteKeyStoreOptions } from './store/sqlite.node.js';

/**
 * The SQLite key store (`oncely/server/sqlite`): the embedded default, on Node's built-in
 * `node:sqlite` (Node 22.16+), else on better-sqlite3 (an optional peer dependency: `npm install
 * better-sqlite3@12`, the only driver on Node 20). Node only.
 *
 * @module
 */
export { sqliteKeyStore, type SqliteKeyStoreOptions } from './store/sqlite.node.js';
export { InvalidOptionError } from './errors/invalid-option-error.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';

/**
 * `oncely/server/mysql`: the key store on MySQL 8 or MariaDB 10.11 (InnoDB), over `mysql2` (an
 * optional peer dependency: `npm install mysql2`). Its steps' SQL speaks the `'mysql'` dialect.
 * docs/key-store.md walks through how it was written, from `oncely/server/store` alone.
 *
 * @module
 */
export { mysqlKeyStore, type MysqlKeyStoreOptions } from './mysql/store.node.js';

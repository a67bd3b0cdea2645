/**
 * The PostgreSQL key store (`oncely/server/postgres`): for many server instances on one
 * database, on `pg` (an optional peer dependency: `npm install pg@8`), or over an in-process
 * PGlite. Node only.
 *
 * @module
 */
export { postgresKeyStore, type PgliteLike, type PgliteQueryable, type PgliteResults, type PostgresKeyStoreOptions } from './store/postgres.node.js';
export {
  checkReplication,
  judgeReplication,
  ReplicationState,
  type ReplicationFacts,
  type ReplicationReport,
  type ReplicationSource,
} from './store/postgres-replication.node.js';
export { DatabaseSetupError } from './errors/database-setup-error.js';
export { InvalidOptionError } from './errors/invalid-option-error.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';

import { openPgBackend } from '../../support/pg.js';
import { postgresStoreSuite } from './postgres-suite.js';

postgresStoreSuite('postgresKeyStore on PostgreSQL (PGlite only when no server is reachable)', () => openPgBackend('store'));

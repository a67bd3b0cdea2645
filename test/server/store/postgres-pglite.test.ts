import { openPglite } from '../../support/pg.js';
import { postgresStoreSuite } from './postgres-suite.js';

postgresStoreSuite('postgresKeyStore on PGlite', () => openPglite('store_pglite'));

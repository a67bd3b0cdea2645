/**
 * `mysqlKeyStore` passes every KeyStore contract suite, run from `oncely/server/testing` as a
 * store author runs them, on the MariaDB / MySQL server of test/support/mysql.ts (every test uses
 * its own client id, so all share one database).
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { describeKeyStore } from '../../../src/server/testing.js';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../../support/mysql.js';

const run = await canRunMysqlTests();
let backend: MysqlBackend | undefined;
let url: string | undefined;
beforeAll(async () => {
  if (!run) return;
  backend = await openMysqlBackend('contract');
  url = await backend.newDatabase();
});
afterAll(async () => backend?.close());

describe.runIf(run)('mysqlKeyStore', () => {
  // The wait of an admission is bounded (in whole seconds: innodb_lock_wait_timeout).
  describeKeyStore('mysql', async () => backend!.open(url!), { boundsWait: true });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { availableDrivers, type SqliteDriver } from '../../src/sqlite/driver.node.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';
import { editSqliteRow } from './fixtures/row-edits-sqlite.js';

const fixture = (durability: 'process' | 'power', driver: SqliteDriver) => (): JournalFixture => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-journal-'));
  const path = join(dir, 'journal.db');
  return {
    open: () => sqliteJournal({ path, durability, driver }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
    edit: (scope, key, change) => editSqliteRow(path, scope, key, change),
  };
};

// On every driver this Node can load: node:sqlite on Node 22.16+, better-sqlite3 where its native
// module was built for this Node (test/sqlite/driver.test.ts checks that the expected ones are here).
for (const driver of availableDrivers()) {
  runJournalContract(`sqlite on ${driver} (durability process)`, fixture('process', driver), { persistent: true, editable: true });
  runJournalContract(`sqlite on ${driver} (durability power)`, fixture('power', driver), { persistent: true, editable: true });
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';
import { editSqliteRow } from './fixtures/row-edits-sqlite.js';

const fixture = (durability: 'process' | 'power') => (): JournalFixture => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-journal-'));
  const path = join(dir, 'journal.db');
  return {
    open: () => sqliteJournal({ path, durability }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
    edit: (scope, key, change) => editSqliteRow(path, scope, key, change),
  };
};

runJournalContract('sqlite (durability process)', fixture('process'), { persistent: true, editable: true });
runJournalContract('sqlite (durability power)', fixture('power'), { persistent: true, editable: true });

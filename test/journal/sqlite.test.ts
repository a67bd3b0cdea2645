import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';

const fixture = (durability: 'process' | 'power') => (): JournalFixture => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-journal-'));
  return {
    open: () => sqliteJournal({ path: join(dir, 'journal.db'), durability }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
};

runJournalContract('sqlite (durability process)', fixture('process'), { persistent: true });
runJournalContract('sqlite (durability power)', fixture('power'), { persistent: true });

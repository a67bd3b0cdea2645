/**
 * Model-based runs of the Journal contract (src/journal/types.ts) on the memory and SQLite
 * journals, and on the IndexedDB journal over fake-indexeddb with a fake lock manager (the browser
 * suite runs the same model on Chromium's: test/browser/). See ./journal-model.ts.
 */
import 'fake-indexeddb/auto';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { indexedDbJournal } from '../../../src/journal/indexeddb.browser.js';
import { memoryJournal } from '../../../src/journal/memory.js';
import { sqliteJournal } from '../../../src/journal/sqlite.node.js';
import { fakeWebLocks } from '../../journal/fake-web-locks.js';
import { checkProperty } from '../settings.js';
import { journalCommands } from './journal-commands.js';
import { HOUR, runJournalModel } from './journal-model.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-journal-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const commands = fc.commands(journalCommands([0, 1, 1_000, HOUR]), { maxCommands: 40, size: 'medium' });

describe('Journal model', () => {
  it('memory: agrees with the model on every answer and every record, claims racing included', () =>
    checkProperty(
      fc.asyncProperty(commands, (cmds) => runJournalModel(() => memoryJournal(), cmds)),
      100,
    ));

  let files = 0;
  it('SQLite: agrees with the model on every answer and every record, claims racing included', () =>
    checkProperty(
      fc.asyncProperty(commands, (cmds) => {
        files += 1;
        return runJournalModel(() => sqliteJournal({ path: join(dir, `journal-${files}.db`) }), cmds);
      }),
      40,
    ));

  let databases = 0;
  it.each([
    ['lease records', [0, 1, 1_000, HOUR]],
    // A lock is also dropped by a real timer after its ttl: only lengths no run outlasts, or 0.
    ['Web Locks', [0, HOUR]],
  ] as const)('IndexedDB (%s): agrees with the model on every answer and every record, claims racing included', (locks, ttls) =>
    checkProperty(
      fc.asyncProperty(fc.commands(journalCommands(ttls), { maxCommands: 40, size: 'medium' }), (cmds) => {
        databases += 1;
        const dbName = `oncely-model-${databases}`;
        return runJournalModel(
          () => indexedDbJournal({ dbName, locks: locks === 'Web Locks' ? fakeWebLocks() : null }),
          cmds,
          () => {
            indexedDB.deleteDatabase(dbName);
          },
        );
      }),
      30,
    ),
  );
});

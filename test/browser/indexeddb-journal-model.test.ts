/**
 * The journal model (test/property/journal/journal-model.ts) on Chromium's IndexedDB, with claims
 * held by the browser's Web Locks and by lease records.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { journalCommands } from '../property/journal/journal-commands.js';
import { HOUR, runJournalModel } from '../property/journal/journal-model.js';
import { checkProperty } from '../property/settings.js';

let databases = 0;
const deleteDatabase = (dbName: string): Promise<void> =>
  new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(dbName);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });

function modelRun(locks: 'web-locks' | 'lease-records', ttls: readonly number[]) {
  return fc.asyncProperty(fc.commands(journalCommands(ttls), { maxCommands: 40, size: 'medium' }), (commands) => {
    databases += 1;
    const dbName = `oncely-model-${locks}-${databases}-${Math.random().toString(36).slice(2)}`;
    return runJournalModel(
      () => indexedDbJournal(locks === 'web-locks' ? { dbName } : { dbName, locks: null }),
      commands,
      () => deleteDatabase(dbName),
    );
  });
}

describe('Journal model: IndexedDB in Chromium', () => {
  it(
    'lease records: agrees with the model on every answer and every record, claims racing included',
    () => checkProperty(modelRun('lease-records', [0, 1, 1_000, HOUR]), 30),
    30_000,
  );

  // A Web Lock is also given back by a real timer after its ttl: only lengths no run outlasts, or 0.
  it(
    'Web Locks: agrees with the model on every answer and every record, claims racing included',
    () => checkProperty(modelRun('web-locks', [0, HOUR]), 30),
    30_000,
  );
});

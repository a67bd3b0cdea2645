import 'fake-indexeddb/auto';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';
import { fakeWebLocks } from './fake-web-locks.js';
import { editIdbRow } from './fixtures/row-edits-idb.js';

let databases = 0;
const fixture = (withLocks: boolean) => (): JournalFixture => {
  databases += 1;
  const dbName = `oncely-test-${databases}`;
  // One lock manager per fixture: every handle on the store is a tab of the same origin.
  const locks = withLocks ? fakeWebLocks() : null;
  return {
    open: () => indexedDbJournal({ dbName, locks }),
    edit: (scope, key, change) => editIdbRow(dbName, scope, key, change),
    cleanup: () =>
      new Promise<void>((resolve, reject) => {
        const request = indexedDB.deleteDatabase(dbName);
        request.onsuccess = () => resolve();
        request.onerror = () => reject(request.error);
      }),
  };
};

runJournalContract('indexeddb (lease records)', fixture(false), { persistent: true, editable: true });
runJournalContract('indexeddb (Web Locks)', fixture(true), { persistent: true, editable: true });

import 'fake-indexeddb/auto';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';
import { fakeWebLocks } from './fake-web-locks.js';

let databases = 0;
const fixture = (withLocks: boolean) => (): JournalFixture => {
  databases += 1;
  const dbName = `oncely-test-${databases}`;
  // One lock manager per fixture: every handle on the store is a tab of the same origin.
  const locks = withLocks ? fakeWebLocks() : null;
  return {
    open: () => indexedDbJournal({ dbName, locks }),
    cleanup: () =>
      new Promise<void>((resolve, reject) => {
        const request = indexedDB.deleteDatabase(dbName);
        request.onsuccess = () => resolve();
        request.onerror = () => reject(request.error);
      }),
  };
};

runJournalContract('indexeddb (lease records)', fixture(false), { persistent: true });
runJournalContract('indexeddb (Web Locks)', fixture(true), { persistent: true });

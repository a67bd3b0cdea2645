/**
 * The journal contract against Chromium's own IndexedDB and Web Locks (the Node suite runs the
 * same contract on fake-indexeddb with a fake lock manager). Every handle opened by one fixture
 * lives in this page, so for the Web Locks variant two handles contend like two tabs: the lock
 * manager is the browser's, per origin.
 */
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { runJournalContract, type JournalFixture } from '../contract/journal.contract.js';
import { editIdbRow } from '../journal/fixtures/row-edits-idb.js';

let databases = 0;
const fixture = (locks: 'web-locks' | 'lease-records') => (): JournalFixture => {
  databases += 1;
  const dbName = `oncely-chromium-${locks}-${databases}-${Date.now()}`;
  return {
    open: () => indexedDbJournal(locks === 'web-locks' ? { dbName } : { dbName, locks: null }),
    edit: (scope, key, change) => editIdbRow(dbName, scope, key, change),
    cleanup: () =>
      new Promise<void>((resolve, reject) => {
        const request = indexedDB.deleteDatabase(dbName);
        request.onsuccess = () => resolve();
        request.onerror = () => reject(request.error);
      }),
  };
};

runJournalContract('indexeddb in Chromium (navigator.locks)', fixture('web-locks'), { persistent: true, editable: true });
runJournalContract('indexeddb in Chromium (lease records)', fixture('lease-records'), { persistent: true, editable: true });

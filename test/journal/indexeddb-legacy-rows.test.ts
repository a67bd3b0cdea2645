/**
 * Rows an older oncely wrote to IndexedDB have no `submittedAt`. That version's resume() sent
 * every pending record, so such a row reads as submitted when it was journaled: resume() keeps
 * finishing what it always finished.
 */
import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { META_KEY, SCHEMA, STORE } from '../../src/journal/indexeddb-store.browser.js';

const dbName = 'oncely-legacy-rows';

/** A pending row as the code before `submittedAt` stored it. */
const legacyRow = (key: string, seq: number) => ({
  record: {
    key,
    method: 'POST',
    url: 'http://127.0.0.1:8787/v1/payments',
    headers: { 'content-type': 'application/json' },
    body: `{"amount":${1000 + seq},"currency":"EUR","reference":"legacy-${seq}"}`,
    fingerprint: `sha256:legacy-${seq}`,
    state: 'pending',
    createdAt: 1_764_756_000_000 + seq,
    updatedAt: 1_764_756_000_000 + seq,
    attempts: 1,
    lastStatus: 503,
    result: null,
  },
  seq,
  claimOwner: null,
  claimedUntil: null,
});

/** Writes the rows straight into IndexedDB, then closes the connection (or deleting would block). */
function writeLegacyRows(keys: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(dbName);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction(STORE, 'readwrite');
      const store = tx.objectStore(STORE);
      for (const [index, key] of keys.entries()) store.put(legacyRow(key, index + 1), key);
      store.put({ schema: SCHEMA, seq: keys.length }, META_KEY);
      tx.oncomplete = () => {
        db.close();
        resolve();
      };
      tx.onabort = () => reject(tx.error);
    };
  });
}

afterEach(
  () =>
    new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    }),
);

describe('IndexedDB journal: rows written before submittedAt existed', () => {
  it('reads a row without submittedAt as submitted at its createdAt, from get, list, update and put', async () => {
    await writeLegacyRows(['legacy-1', 'legacy-2']);
    const journal = indexedDbJournal({ dbName, locks: null });
    expect((await journal.get('legacy-1'))?.submittedAt).toBe(1_764_756_000_001);
    expect((await journal.list()).map((r) => r.submittedAt)).toEqual([1_764_756_000_001, 1_764_756_000_002]);
    expect((await journal.update('legacy-2', { attempts: 2 }))?.submittedAt).toBe(1_764_756_000_002);
    const again = await journal.put({ ...legacyRow('legacy-1', 1).record, submitted: false });
    expect(again).toMatchObject({ created: false, record: { submittedAt: 1_764_756_000_001 } });
    await journal.close();
  });

  it('resumes such rows, as the code that wrote them would have', async () => {
    await writeLegacyRows(['legacy-1']);
    const journal = indexedDbJournal({ dbName, locks: null });
    const sent: string[] = [];
    const client = createClient({
      baseUrl: 'http://127.0.0.1:8787',
      journal,
      keyTtlMs: 10 * 365 * 24 * 3_600_000,
      fetch: async (request) => {
        sent.push(String(request.headers.get('idempotency-key')));
        return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
      },
    });
    expect(await client.resume()).toMatchObject([{ key: 'legacy-1', state: 'succeeded' }]);
    expect(sent).toEqual(['legacy-1']);
    await client.close();
    await journal.close();
  });
});

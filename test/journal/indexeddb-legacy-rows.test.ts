/**
 * Rows an older oncely wrote to IndexedDB (schema 1) are stored under their bare idempotency key,
 * have no `scope` and may have no `submittedAt`. On first open they move to the key of their
 * scope (their URL's origin), their headers cut to the allow-list. That version's resume() sent every pending record, so a row
 * without `submittedAt` reads as submitted when it was journaled: resume() keeps finishing what
 * it always finished.
 */
import 'fake-indexeddb/auto';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { fingerprintInput } from '../../src/fingerprint.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { META_KEY, SCHEMA, STORE } from '../../src/journal/indexeddb-store.browser.js';

const dbName = 'oncely-legacy-rows';
/** The scope a legacy row belongs to once migrated: the origin of its URL. */
const SCOPE = 'http://127.0.0.1:8787';
/** The row layout of the code that wrote these rows. */
const LEGACY_SCHEMA = 1;

const legacyBody = (seq: number): string => `{"amount":${1000 + seq},"currency":"EUR","reference":"legacy-${seq}"}`;

/** A pending row as the code before `submittedAt` (and scopes) stored it, with the fingerprint that code computed. */
const legacyRow = (key: string, seq: number) => ({
  record: {
    key,
    method: 'POST',
    url: 'http://127.0.0.1:8787/v1/payments',
    // Older code journaled every non-credential header: x-api-key is dropped by the migration.
    headers: { 'content-type': 'application/json', 'x-api-key': 'SECRET-legacy' },
    body: legacyBody(seq),
    fingerprint: createHash('sha256')
      .update(fingerprintInput('POST', '/v1/payments', legacyBody(seq), { contentType: 'application/json' }))
      .digest('hex'),
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
      store.put({ schema: LEGACY_SCHEMA, seq: keys.length }, META_KEY);
      tx.oncomplete = () => {
        db.close();
        resolve();
      };
      tx.onabort = () => reject(tx.error);
    };
  });
}

/** Every key of the store and the meta entry, read straight from IndexedDB. */
function readRaw(): Promise<{ keys: unknown[]; meta: unknown }> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(dbName);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const store = db.transaction(STORE, 'readonly').objectStore(STORE);
      const keys = store.getAllKeys();
      const meta = store.get(META_KEY);
      meta.onsuccess = () => {
        db.close();
        resolve({ keys: keys.result, meta: meta.result });
      };
      meta.onerror = () => reject(meta.error);
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

describe('IndexedDB journal: rows written before submittedAt and scopes existed', () => {
  it('reads a row without submittedAt as submitted at its createdAt, in the scope of its origin, from get, list, update and put', async () => {
    await writeLegacyRows(['legacy-1', 'legacy-2']);
    const journal = indexedDbJournal({ dbName, locks: null });
    expect(await journal.get(SCOPE, 'legacy-1')).toMatchObject({ scope: SCOPE, key: 'legacy-1', submittedAt: 1_764_756_000_001 });
    expect((await journal.list()).map((r) => [r.scope, r.key, r.submittedAt])).toEqual([
      [SCOPE, 'legacy-1', 1_764_756_000_001],
      [SCOPE, 'legacy-2', 1_764_756_000_002],
    ]);
    expect((await journal.list({ scope: SCOPE })).map((r) => r.key)).toEqual(['legacy-1', 'legacy-2']);
    expect(await journal.damaged()).toEqual([]);
    expect((await journal.update(SCOPE, 'legacy-2', { attempts: 2 }))?.submittedAt).toBe(1_764_756_000_002);
    const again = await journal.put({ ...legacyRow('legacy-1', 1).record, scope: SCOPE, submitted: false });
    expect(again).toMatchObject({ created: false, record: { submittedAt: 1_764_756_000_001 } });
    await journal.close();
  });

  it('moves legacy rows to the key of their scope once, keeping their bytes and allow-listed headers only, and marks the store as the current schema', async () => {
    await writeLegacyRows(['legacy-1', 'legacy-2']);
    const journal = indexedDbJournal({ dbName, locks: null });
    const records = await journal.list();
    expect(records.map((r) => r.body)).toEqual([legacyRow('legacy-1', 1).record.body, legacyRow('legacy-2', 2).record.body]);
    expect(records.map((r) => r.headers)).toEqual([{ 'content-type': 'application/json' }, { 'content-type': 'application/json' }]);
    await journal.close();
    const raw = await readRaw();
    expect(raw.keys.filter((key) => typeof key === 'string').sort()).toEqual([`${SCOPE} legacy-1`, `${SCOPE} legacy-2`]);
    expect(raw.meta).toMatchObject({ schema: SCHEMA });
    const reopened = indexedDbJournal({ dbName, locks: null });
    expect(await reopened.list()).toEqual(records);
    await reopened.close();
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

/**
 * Rows written before seals existed (SQLite schema 4, IndexedDB row layout 2) are sealed as they
 * are found when a journal first opens them: they read back unchanged, and any change made outside
 * oncely from then on makes them damaged. A row that could not be read stays unsealed and is
 * reported for what it is.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { META_KEY, SCHEMA, STORE } from '../../src/journal/indexeddb-store.browser.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_V1 } from '../../src/journal/sqlite-schema.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { editIdbRow } from './fixtures/row-edits-idb.js';
import { editSqliteRow } from './fixtures/row-edits-sqlite.js';

const SCOPE = 'http://127.0.0.1:8787';
const SEALED = /changed outside oncely/;

const record = (key: string, state: string) => ({
  scope: SCOPE,
  key,
  method: 'POST',
  url: `${SCOPE}/v1/payments`,
  headers: { 'content-type': 'application/json' },
  body: '{"amount":1}',
  fingerprint: `sha256:${key}`,
  state,
  createdAt: 1_764_800_000_000,
  updatedAt: 1_764_800_000_001,
  submittedAt: 1_764_800_000_000,
  attempts: state === 'pending' ? 0 : 1,
  lastStatus: state === 'pending' ? null : 201,
  result: state === 'pending' ? null : { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}', replayed: false },
});

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-seal-migration-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A journal of schema version 4, built from version 1's SQL and the migrations up to 4, holding `rows` and one unreadable row. */
function writeV4(rows: ReadonlyArray<ReturnType<typeof record>>): void {
  const db = openRawDb(path);
  db.exec(SCHEMA_V1);
  for (const version of [1, 2, 3]) {
    const step = MIGRATIONS[version];
    if (typeof step === 'string') db.exec(step);
    else step?.(db);
  }
  db.pragma(`application_id = ${APPLICATION_ID}`);
  db.pragma('user_version = 4');
  const insert = db.prepare(
    `INSERT INTO oncely_operations (scope, key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at, attempts, last_status, result)
     VALUES (@scope, @key, @method, @url, @headers, @body, @fingerprint, @state, @createdAt, @updatedAt, @submittedAt, @attempts, @lastStatus, @result)`,
  );
  for (const row of rows) insert.run({ ...row, headers: JSON.stringify(row.headers), result: row.result === null ? null : JSON.stringify(row.result) });
  insert.run({ ...rows[0], key: 'unreadable', headers: '{"content-type": "appl', result: null });
  db.close();
}

describe('SQLite journal schema 4 → 5', () => {
  it('seals every readable row as it is: each reads back unchanged, and is damaged once changed outside oncely', async () => {
    const rows = [record('k-pending', 'pending'), record('k-paid', 'succeeded')];
    writeV4(rows);
    const journal = sqliteJournal({ path });
    expect(await journal.list()).toEqual(rows);
    expect(await journal.damaged()).toEqual([{ scope: SCOPE, key: 'unreadable', reason: 'its headers are not valid JSON' }]);
    const raw = openRawDb(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(5);
    expect(raw.prepare('SELECT key, seal IS NOT NULL AS sealed FROM oncely_operations ORDER BY key').all()).toEqual([
      { key: 'k-paid', sealed: 1 },
      { key: 'k-pending', sealed: 1 },
      { key: 'unreadable', sealed: 0 },
    ]);
    raw.close();
    editSqliteRow(path, SCOPE, 'k-paid', { state: 'pending' });
    expect(await journal.damaged()).toContainEqual({ scope: SCOPE, key: 'k-paid', reason: expect.stringMatching(SEALED) });
    expect((await journal.list()).map((r) => r.key)).toEqual(['k-pending']);
    await journal.close();
  });
});

describe('IndexedDB journal row layout 2 → 3', () => {
  const dbName = 'oncely-seal-migration';
  afterEach(
    () =>
      new Promise<void>((resolve, reject) => {
        const request = indexedDB.deleteDatabase(dbName);
        request.onsuccess = () => resolve();
        request.onerror = () => reject(request.error);
      }),
  );

  /** Rows as layout 2 stored them (no seal), and one that holds no record. */
  const writeLayout2 = (rows: ReadonlyArray<ReturnType<typeof record>>): Promise<void> =>
    new Promise((resolve, reject) => {
      const open = indexedDB.open(dbName);
      open.onupgradeneeded = () => open.result.createObjectStore(STORE);
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const db = open.result;
        const tx = db.transaction(STORE, 'readwrite');
        const store = tx.objectStore(STORE);
        rows.forEach((row, i) => store.put({ record: row, seq: i + 1, claimOwner: null, claimedUntil: null }, `${SCOPE} ${row.key}`));
        store.put({ record: 'garbage', seq: 9 }, `${SCOPE} unreadable`);
        store.put({ schema: 2, seq: rows.length }, META_KEY);
        tx.oncomplete = () => {
          db.close();
          resolve();
        };
        tx.onabort = () => reject(tx.error);
      };
    });

  it('seals every readable row as it is: each reads back unchanged, and is damaged once changed outside oncely', async () => {
    const rows = [record('k-pending', 'pending'), record('k-paid', 'succeeded')];
    await writeLayout2(rows);
    const journal = indexedDbJournal({ dbName, locks: null });
    expect(await journal.list()).toEqual(rows);
    expect(await journal.damaged()).toEqual([{ scope: SCOPE, key: 'unreadable', reason: 'it holds no operation record' }]);
    expect(SCHEMA).toBe(3);
    await editIdbRow(dbName, SCOPE, 'k-paid', { state: 'pending' });
    expect(await journal.damaged()).toContainEqual({ scope: SCOPE, key: 'k-paid', reason: expect.stringMatching(SEALED) });
    expect((await journal.list()).map((r) => r.key)).toEqual(['k-pending']);
    await journal.close();
  });
});

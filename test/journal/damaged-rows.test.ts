/**
 * A journal row that cannot be read is quarantined: reported by `pending()` and `resume()` (and
 * `oncely pending`), never deleted or rewritten, and it never stops the healthy rows.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { STORE } from '../../src/journal/indexeddb-store.browser.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';
import { runCli } from '../cli/helpers/processes.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

const HEALTHY = 100;

let dir: string;
let server: EffectServer;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-damaged-'));
  server = await startEffectServer();
});
afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Journals `count` submitted operations without sending them; returns their keys. */
async function submitted(journal: Journal, count: number): Promise<string[]> {
  const client = createClient({ baseUrl: server.url, journal });
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await client.prepare('POST', 'v1/pay', { json: { amount: 100 + i } });
    await journal.update(client.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await client.close();
  return keys;
}

/** Resumes the journal's operations; returns what `pending()` said before and what `resume()` did. */
async function pendingAndResume(journal: Journal) {
  const client = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer resumer' } });
  const before = await client.pending();
  const outcomes = await client.resume();
  const after = await client.pending();
  await client.close();
  return { before, outcomes, after };
}

describe('a damaged row among healthy ones', () => {
  it('SQLite: resumes the healthy rows, reports the damaged one and leaves its bytes as they were', async () => {
    const path = join(dir, 'journal.db');
    const journal = sqliteJournal({ path });
    const keys = await submitted(journal, HEALTHY + 1);
    const victim = keys[37] as string;
    const raw = openRawDb(path);
    raw.prepare('UPDATE oncely_operations SET headers = ? WHERE key = ?').run('{"content-type": "application/js', victim);
    const rowOf = () => raw.prepare('SELECT * FROM oncely_operations WHERE key = ?').get(victim);
    const damagedRow = rowOf();

    const { before, outcomes, after } = await pendingAndResume(journal);
    expect(before.filter((op) => op.state === 'pending')).toHaveLength(HEALTHY);
    expect(before.filter((op) => op.state === 'damaged')).toEqual([{ key: victim, state: 'damaged', reason: 'its headers are not valid JSON' }]);
    expect(outcomes.filter((o) => o.state === 'succeeded')).toHaveLength(HEALTHY);
    expect(outcomes.filter((o) => o.state === 'damaged').map((o) => o.key)).toEqual([victim]);
    expect(after.map((op) => op.state)).toEqual(['damaged']);
    expect(server.effects.size).toBe(HEALTHY);
    expect(server.effects.has(victim)).toBe(false);
    await expect(journal.get(server.url, victim)).rejects.toMatchObject({ code: 'JOURNAL_ERROR', message: expect.stringContaining('damaged') });
    await journal.close();

    const listed = await runCli(['pending', '--journal', path, '--url', server.url]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${victim}  damaged  its headers are not valid JSON`);
    expect(rowOf()).toEqual(damagedRow);
    raw.close();
  }, 60_000);

  it('IndexedDB: resumes the healthy rows, reports the damaged one and leaves it as it was', async () => {
    const dbName = `oncely-damaged-${Date.now()}`;
    const journal = indexedDbJournal({ dbName, locks: null });
    const keys = await submitted(journal, HEALTHY + 1);
    const victim = keys[12] as string;
    const storeKey = `${server.url} ${victim}`;
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(dbName);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const write = (value: unknown) =>
      new Promise<void>((resolve, reject) => {
        const tx = db.transaction(STORE, 'readwrite');
        tx.objectStore(STORE).put(value, storeKey);
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
      });
    const read = () =>
      new Promise<unknown>((resolve) => {
        const request = db.transaction(STORE).objectStore(STORE).get(storeKey);
        request.onsuccess = () => resolve(request.result);
      });
    await write({ record: 'garbage', seq: 'x' });

    const { before, outcomes } = await pendingAndResume(journal);
    expect(before.filter((op) => op.state === 'pending')).toHaveLength(HEALTHY);
    expect(before.filter((op) => op.state === 'damaged')).toEqual([{ key: victim, state: 'damaged', reason: 'it holds no operation record' }]);
    expect(outcomes.filter((o) => o.state === 'succeeded')).toHaveLength(HEALTHY);
    expect(outcomes.filter((o) => o.state === 'damaged').map((o) => o.key)).toEqual([victim]);
    expect(server.effects.size).toBe(HEALTHY);
    expect(await read()).toEqual({ record: 'garbage', seq: 'x' });
    db.close();
    await journal.close();
  }, 60_000);
});

/**
 * A journal row changed after the client wrote it — its body edited, its URL moved to another
 * host — is never sent under its key: every row read back is checked against its fingerprint
 * and its scope before any attempt, and one that fails is reported as damaged while the healthy
 * rows go on. The rows are written by the client into a real SQLite file and edited with a
 * separate connection, as anyone with access to the file could.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { JournalError } from '../../src/errors.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { STORE } from '../../src/journal/indexeddb-store.browser.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';
import { createServiceWorkerResumer } from '../../src/service-worker/index.js';
import { runCli } from '../cli/helpers/processes.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

const COUNT = 20;

let dir: string;
let path: string;
let server: EffectServer;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-tampered-'));
  path = join(dir, 'journal.db');
  server = await startEffectServer();
});
afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Journals `count` payments of 500, 501, … as submitted (a process that died before sending them); returns their keys. */
async function submitted(journal: Journal, count: number, pathname = 'v1/pay'): Promise<string[]> {
  const client = createClient({ baseUrl: server.url, journal });
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await client.prepare('POST', pathname, { json: { amount: 500 + i, currency: 'EUR' } });
    await journal.update(client.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await client.close();
  return keys;
}

/** Runs `sql` on the journal file through a connection of its own. */
function edit(sql: string, ...params: unknown[]): void {
  const raw = openRawDb(path);
  raw.prepare(sql).run(...params);
  raw.close();
}

const rowOf = (key: string): unknown => {
  const raw = openRawDb(path, { readonly: true });
  const row = raw.prepare('SELECT * FROM oncely_operations WHERE key = ?').get(key);
  raw.close();
  return row;
};

const sentBodies = (): string[] => server.attempts.map((attempt) => attempt.body.toString());

describe('a row whose body was edited after it was journaled', () => {
  it('is reported damaged by pending() and resume(), never sent, left as it is; the 19 healthy rows are sent', async () => {
    const journal = sqliteJournal({ path });
    const keys = await submitted(journal, COUNT);
    const victim = keys[7] as string;
    edit('UPDATE oncely_operations SET body = replace(body, \'"amount":507\', \'"amount":999999\') WHERE key = ?', victim);
    const edited = rowOf(victim);

    const client = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer resumer' } });
    const before = await client.pending();
    expect(before.filter((op) => op.state === 'pending')).toHaveLength(COUNT - 1);
    expect(before.filter((op) => op.state === 'damaged')).toEqual([{ key: victim, state: 'damaged', reason: expect.stringMatching(/fingerprint/) }]);
    const outcomes = await client.resume();
    expect(outcomes.filter((o) => o.state === 'succeeded')).toHaveLength(COUNT - 1);
    expect(outcomes.filter((o) => o.state === 'damaged').map((o) => o.key)).toEqual([victim]);
    expect(server.attempts.map((attempt) => attempt.key)).not.toContain(victim);
    expect(sentBodies().filter((body) => body.includes('999999'))).toEqual([]);
    expect((await client.pending()).map((op) => [op.key, op.state])).toEqual([[victim, 'damaged']]);
    await client.close();
    await journal.close();
    expect(rowOf(victim)).toEqual(edited);

    const listed = await runCli(['pending', '--journal', path, '--url', server.url]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${victim}  damaged  .*fingerprint`));
  }, 60_000);

  it('is refused by send() before its first attempt: a JournalError naming the row, nothing sent', async () => {
    const journal = sqliteJournal({ path });
    const client = createClient({ baseUrl: server.url, journal });
    const op = await client.prepare('POST', 'v1/pay', { json: { amount: 500, currency: 'EUR' } });
    edit('UPDATE oncely_operations SET body = \'{"amount":999999,"currency":"EUR"}\' WHERE key = ?', op.key);

    const error = await op.send().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(JournalError);
    expect((error as JournalError).damaged).toEqual({ scope: client.scope, key: op.key, reason: expect.stringMatching(/fingerprint/) });
    expect(String(error)).toMatch(/\(Idempotency-Key [^)]+\) was not sent: its journal row is damaged/);
    expect(server.attempts).toEqual([]);
    await client.close();
    await journal.close();
  });

  it('is refused when send() retries an operation after its first attempt: only the journaled bytes ever leave', async () => {
    const journal = sqliteJournal({ path });
    // /v1/busy answers 503 Retry-After: 30 to a key's first attempt; no retry is allowed, so it stays pending.
    const client = createClient({ baseUrl: server.url, journal, retry: { limit: 0 } });
    const op = await client.prepare('POST', 'v1/busy', { json: { amount: 500, currency: 'EUR' } });
    await expect(op.send()).rejects.toMatchObject({ code: 'OPERATION_PENDING' });
    edit('UPDATE oncely_operations SET body = \'{"amount":999999,"currency":"EUR"}\' WHERE key = ?', op.key);

    await expect(op.send()).rejects.toMatchObject({ code: 'JOURNAL_ERROR', damaged: { key: op.key } });
    expect(server.attempts.map((attempt) => [attempt.outcome, attempt.body.toString()])).toEqual([['busy', '{"amount":500,"currency":"EUR"}']]);
    await client.close();
    await journal.close();
  });

  it('is never sent by a Service Worker resumer', async () => {
    const journal = indexedDbJournal({ dbName: `oncely-tampered-${Date.now()}`, locks: null });
    const keys = await submitted(journal, 3);
    const victim = keys[1] as string;
    const stored = await idbRow(journal.dbName, server.url, victim);
    await stored.write({ ...stored.value, record: { ...stored.value.record, body: '{"amount":999999,"currency":"EUR"}' } });

    const resumer = createServiceWorkerResumer({ baseUrl: server.url, journal, worker: new EventTarget(), channel: null });
    const report = await resumer.resume('online');
    await resumer.close();
    expect(report.outcomes.filter((o) => o.state === 'damaged')).toEqual([{ key: victim, state: 'damaged', reason: expect.stringMatching(/fingerprint/) }]);
    expect(server.attempts.map((attempt) => attempt.key).sort()).toEqual([keys[0], keys[2]].sort());
    expect(sentBodies().filter((body) => body.includes('999999'))).toEqual([]);
    stored.close();
    await journal.close();
  });
});

describe('a row whose headers or method were edited', () => {
  it('is reported damaged and never sent when it holds a credential header, or a method in another case', async () => {
    const journal = sqliteJournal({ path });
    const keys = await submitted(journal, 6);
    const [withToken, lowerCase, withApiKey] = [keys[1] as string, keys[3] as string, keys[5] as string];
    edit('UPDATE oncely_operations SET headers = ? WHERE key = ?', '{"content-type":"application/json","authorization":"Bearer someone-else"}', withToken);
    edit("UPDATE oncely_operations SET method = 'post' WHERE key = ?", lowerCase);
    // A credential by the journal's naming rule, not only the few fixed names.
    edit('UPDATE oncely_operations SET headers = ? WHERE key = ?', '{"content-type":"application/json","x-api-key":"someone-elses"}', withApiKey);

    const client = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer resumer' } });
    const outcomes = await client.resume();
    // Headers are sealed (src/journal/seal.ts): the journal itself reports those two rows, after
    // the rows the client's own check refuses.
    expect(outcomes.filter((o) => o.state === 'damaged')).toEqual([
      { key: lowerCase, state: 'damaged', reason: expect.stringMatching(/its method "post"/) },
      { key: withToken, state: 'damaged', reason: 'its headers hold authorization, which is never journaled' },
      { key: withApiKey, state: 'damaged', reason: 'its headers hold x-api-key, which is never journaled' },
    ]);
    expect(server.attempts.map((attempt) => attempt.key).sort()).toEqual([keys[0], keys[2], keys[4]].sort());
    expect(server.attempts.map((attempt) => attempt.process)).toEqual(['resumer', 'resumer', 'resumer']);
    await client.close();
    await journal.close();
  });
});

describe('a row moved to another origin', () => {
  it('is reported damaged and the other 19 rows are resumed: resume() does not reject', async () => {
    const journal = sqliteJournal({ path });
    const keys = await submitted(journal, COUNT);
    const victim = keys[14] as string;
    edit("UPDATE oncely_operations SET url = 'http://127.0.0.2:9/v1/pay' WHERE key = ?", victim);

    const client = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer resumer' } });
    const outcomes = await client.resume();
    expect(outcomes.filter((o) => o.state === 'succeeded')).toHaveLength(COUNT - 1);
    expect(outcomes.filter((o) => o.state === 'damaged')).toEqual([
      { key: victim, state: 'damaged', reason: expect.stringMatching(/outside its scope's origin/) },
    ]);
    expect(server.effects.size).toBe(COUNT - 1);
    expect(await client.pending()).toEqual([{ key: victim, state: 'damaged', reason: expect.stringMatching(/127\.0\.0\.2:9/) }]);
    await client.close();
    await journal.close();

    const listed = await runCli(['pending', '--journal', path]);
    expect(listed.stdout).toMatch(new RegExp(`${victim}  damaged  .*outside its scope's origin`));
  }, 60_000);

  it('IndexedDB: is reported damaged and never sent, the other rows are resumed', async () => {
    const journal = indexedDbJournal({ dbName: `oncely-moved-${Date.now()}`, locks: null });
    const keys = await submitted(journal, 5);
    const victim = keys[2] as string;
    const stored = await idbRow(journal.dbName, server.url, victim);
    await stored.write({ ...stored.value, record: { ...stored.value.record, url: 'http://127.0.0.2:9/v1/pay' } });

    const client = createClient({ baseUrl: server.url, journal });
    const outcomes = await client.resume();
    expect(outcomes.filter((o) => o.state === 'succeeded')).toHaveLength(4);
    expect(outcomes.filter((o) => o.state === 'damaged').map((o) => o.key)).toEqual([victim]);
    expect(server.attempts.map((attempt) => attempt.key)).not.toContain(victim);
    await client.close();
    stored.close();
    await journal.close();
  });
});

interface StoredRow {
  readonly record: Record<string, unknown>;
  readonly [field: string]: unknown;
}

/** The IndexedDB value of one operation, and a way to overwrite it behind the journal's back. */
async function idbRow(dbName: string, scope: string, key: string) {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const storeKey = `${scope} ${key}`;
  const value = await new Promise<StoredRow>((resolve) => {
    const request = db.transaction(STORE).objectStore(STORE).get(storeKey);
    request.onsuccess = () => resolve(request.result as StoredRow);
  });
  return {
    value,
    write: (next: unknown) =>
      new Promise<void>((resolve, reject) => {
        const tx = db.transaction(STORE, 'readwrite');
        tx.objectStore(STORE).put(next, storeKey);
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
      }),
    close: () => db.close(),
  };
}

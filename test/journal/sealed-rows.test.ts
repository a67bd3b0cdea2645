/**
 * A journal row whose key, scope, state, outcome or timestamps were changed outside oncely is
 * never sent: `pending()` and `resume()` report it damaged, the server never sees its body under
 * any key, and the other rows are resumed. The rows are written by a client, into a real SQLite
 * file and into IndexedDB (fake-indexeddb here; Chromium's in test/browser/journal-seal.test.ts),
 * then edited through a connection of their own, as anyone who may write the store could.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import type { ClientOptions } from '../../src/client/options.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';
import { newKey } from '../../src/keys.js';
import { createServiceWorkerResumer } from '../../src/service-worker/index.js';
import type { RowEdit } from '../contract/journal-edits.contract.js';
import { runCli } from '../cli/helpers/processes.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';
import { editIdbRow, moveIdbRow } from './fixtures/row-edits-idb.js';
import { editSqliteRow } from './fixtures/row-edits-sqlite.js';

const SEALED = /changed outside oncely/;

interface Backend {
  readonly journal: Journal;
  readonly path: string;
  edit(scope: string, key: string, change: RowEdit): Promise<void> | void;
}

let dir: string;
let server: EffectServer;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-sealed-'));
  server = await startEffectServer();
});
afterEach(async () => {
  vi.useRealTimers();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

let databases = 0;
const backends: Record<'sqlite' | 'indexeddb', () => Backend> = {
  sqlite: () => {
    const path = join(dir, 'journal.db');
    return { journal: sqliteJournal({ path }), path, edit: (scope, key, change) => editSqliteRow(path, scope, key, change) };
  },
  indexeddb: () => {
    databases += 1;
    const dbName = `oncely-sealed-${databases}`;
    return { journal: indexedDbJournal({ dbName, locks: null }), path: dbName, edit: (scope, key, change) => editIdbRow(dbName, scope, key, change) };
  },
};

/** A client of the backend's journal, resuming with its own credentials (`Bearer <name>`). */
const clientOf = (journal: Journal, name = 'resumer', options: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: server.url, journal, headers: { authorization: `Bearer ${name}` }, ...options });

/** Journals payments as submitted without sending them (a process that died first); returns their keys. */
async function submitted(journal: Journal, count: number): Promise<string[]> {
  const client = clientOf(journal, 'writer');
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await client.prepare('POST', 'v1/pay', { json: { amount: 500 + i, currency: 'EUR' } });
    await journal.update(client.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await client.close();
  return keys;
}

/** Sends one payment to `pathname` and lets it settle; returns its key. */
async function settled(journal: Journal, pathname: string): Promise<string> {
  const client = clientOf(journal, 'writer');
  const op = await client.prepare('POST', pathname, { json: { amount: 700, currency: 'EUR' } });
  await op.send().catch(() => undefined);
  // Read back: the outcome, written behind, has committed before anyone edits the row.
  expect((await journal.get(client.scope, op.key))?.state).toBe(pathname === 'v1/pay' ? 'succeeded' : 'failed');
  await client.close();
  return op.key;
}

/** What a fresh client reports and sends: `pending()` before, `resume()`'s outcomes, and the keys the server received meanwhile. */
async function resumed(journal: Journal, name = 'resumer', options: Partial<ClientOptions> = {}) {
  const before = server.attempts.length;
  const client = clientOf(journal, name, options);
  const pending = await client.pending();
  const outcomes = await client.resume();
  await client.close();
  const sent = server.attempts.slice(before).map((attempt) => attempt.key);
  return { pending, outcomes, sent, damaged: outcomes.filter((o) => o.state === 'damaged').map((o) => o.key) };
}

const damagedAs = (key: string) => ({ key, state: 'damaged', reason: expect.stringMatching(SEALED) as unknown });

describe.each(['sqlite', 'indexeddb'] as const)('%s: a row changed outside oncely', (kind) => {
  it('under another key: reported damaged under that key, its body sent under neither key, the other rows resumed', async () => {
    const { journal, path, edit } = backends[kind]();
    const keys = await submitted(journal, 3);
    const renamed = newKey();
    await edit(server.url, keys[1] as string, { key: renamed });
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending).toContainEqual(damagedAs(renamed));
    expect(damaged).toEqual([renamed]);
    expect(sent.sort()).toEqual([keys[0], keys[2]].sort());
    await journal.close();
    if (kind === 'sqlite') {
      const listed = await runCli(['pending', '--journal', path, '--url', server.url]);
      expect(listed.stdout).toMatch(new RegExp(`${renamed}  damaged  .*changed outside oncely`));
    }
  }, 60_000);

  it('with its key swapped with another row: both reported damaged, neither sent', async () => {
    const { journal, edit } = backends[kind]();
    const [a, b, healthy] = (await submitted(journal, 3)) as [string, string, string];
    await edit(server.url, a, { key: 'swapping' });
    await edit(server.url, b, { key: a });
    await edit(server.url, 'swapping', { key: b });
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending.filter((op) => op.state === 'damaged')).toEqual(expect.arrayContaining([damagedAs(a), damagedAs(b)]));
    expect(damaged.sort()).toEqual([a, b].sort());
    expect(sent).toEqual([healthy]);
    await journal.close();
  });

  it('set back to pending after it succeeded, or after it was declined with 402: never sent again', async () => {
    const { journal, edit } = backends[kind]();
    const paid = await settled(journal, 'v1/pay');
    const declined = await settled(journal, 'v1/decline');
    const [healthy] = (await submitted(journal, 1)) as [string];
    await edit(server.url, paid, { state: 'pending' });
    await edit(server.url, declined, { state: 'pending' });
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending.filter((op) => op.state === 'damaged')).toEqual(expect.arrayContaining([damagedAs(paid), damagedAs(declined)]));
    expect(damaged.sort()).toEqual([paid, declined].sort());
    expect(sent).toEqual([healthy]);
    expect(server.attempts.map((attempt) => [attempt.key, attempt.outcome])).toEqual([
      [paid, 'executed'],
      [declined, 'declined'],
      [healthy, 'executed'],
    ]);
    await journal.close();
  });

  it('prepared only, then given a submittedAt: reported damaged, not sent', async () => {
    const { journal, edit } = backends[kind]();
    const writer = clientOf(journal, 'writer');
    const prepared = (await writer.prepare('POST', 'v1/pay', { json: { amount: 900, currency: 'EUR' } })).key;
    await writer.close();
    const [healthy] = (await submitted(journal, 1)) as [string];
    await edit(server.url, prepared, { submittedAt: Date.now() });
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending).toContainEqual(damagedAs(prepared));
    expect(damaged).toEqual([prepared]);
    expect(sent).toEqual([healthy]);
    await journal.close();
  });

  it("moved to another scope name of the same origin: reported damaged to that scope's client, never sent with its credentials", async () => {
    const { journal, edit } = backends[kind]();
    const [moved, healthy] = (await submitted(journal, 2)) as [string, string];
    await edit(server.url, moved, { scope: `${server.url}#payroll` });
    const payroll = await resumed(journal, 'payroll', { scope: 'payroll' });
    expect(payroll.pending).toEqual([damagedAs(moved)]);
    expect(payroll.damaged).toEqual([moved]);
    expect(payroll.sent).toEqual([]);
    const own = await resumed(journal);
    expect(own.pending.map((op) => op.key)).toEqual([healthy]);
    expect(own.sent).toEqual([healthy]);
    expect(server.attempts.map((attempt) => attempt.process)).toEqual(['resumer']);
    await journal.close();
  });

  it('declined with 402, then given last_status 400: its key is never given to another request', async () => {
    const { journal, edit } = backends[kind]();
    const declined = await settled(journal, 'v1/decline');
    await edit(server.url, declined, { lastStatus: 400 });
    const client = clientOf(journal);
    await expect(client.post('v1/pay', { key: declined, json: { amount: 999999, currency: 'EUR' } })).rejects.toMatchObject({
      code: 'JOURNAL_ERROR',
      damaged: { key: declined, reason: expect.stringMatching(SEALED) },
    });
    expect(await client.pending()).toEqual([damagedAs(declined)]);
    await client.close();
    expect(server.attempts.map((attempt) => [attempt.key, attempt.body.toString()])).toEqual([[declined, '{"amount":700,"currency":"EUR"}']]);
    await journal.close();
  });

  it('expired, then given a fresh created_at: reported damaged, not sent', async () => {
    const { journal, edit } = backends[kind]();
    // Journaled two days ago (the wall clock only), past the default one-day key retention.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - 2 * 86_400_000);
    const [aged] = (await submitted(journal, 1)) as [string];
    vi.useRealTimers();
    const [healthy] = (await submitted(journal, 1)) as [string];
    const reader = clientOf(journal);
    expect((await reader.pending()).map((op) => [op.key, op.state])).toEqual([
      [aged, 'expired'],
      [healthy, 'pending'],
    ]);
    await reader.close();
    await edit(server.url, aged, { createdAt: Date.now() });
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending).toContainEqual(damagedAs(aged));
    expect(damaged).toEqual([aged]);
    expect(sent).toEqual([healthy]);
    await journal.close();
  });
});

describe('indexeddb: a row changed outside oncely', () => {
  it('moved under another store key with its record unchanged: reported damaged, not sent under either key', async () => {
    const { journal, path } = backends.indexeddb();
    const [moved, healthy] = (await submitted(journal, 2)) as [string, string];
    const other = newKey();
    await moveIdbRow(path, server.url, moved, other);
    const { pending, damaged, sent } = await resumed(journal);
    expect(pending).toContainEqual({ key: other, state: 'damaged', reason: expect.stringMatching(/stored under another key than its own/) });
    expect(damaged).toEqual([other]);
    expect(sent).toEqual([healthy]);
    await journal.close();
  });

  it('set back to pending after it succeeded: never sent by a Service Worker resumer', async () => {
    const { journal, edit } = backends.indexeddb();
    const paid = await settled(journal, 'v1/pay');
    const [healthy] = (await submitted(journal, 1)) as [string];
    await edit(server.url, paid, { state: 'pending' });
    const resumer = createServiceWorkerResumer({ baseUrl: server.url, journal, worker: new EventTarget(), channel: null });
    const report = await resumer.resume('online');
    await resumer.close();
    expect(report.outcomes.filter((o) => o.state === 'damaged')).toEqual([damagedAs(paid)]);
    expect(server.attempts.map((attempt) => attempt.key)).toEqual([paid, healthy]);
    await journal.close();
  });
});

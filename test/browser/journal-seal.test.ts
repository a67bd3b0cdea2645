/**
 * In Chromium's own IndexedDB: a journal row whose key, scope, state, outcome or timestamps were
 * changed behind the client's back is reported damaged and never sent, and the other rows are
 * resumed (test/journal/sealed-rows.test.ts does the same on SQLite and fake-indexeddb).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import type { ClientOptions } from '../../src/client/options.js';
import { indexedDbJournal, type IndexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { newKey } from '../../src/keys.js';
import type { RowEdit } from '../contract/journal-edits.contract.js';
import { editIdbRow } from '../journal/fixtures/row-edits-idb.js';

const BASE_URL = 'https://api.oncely.test';
const SEALED = /changed outside oncely/;

interface Sent {
  readonly key: string | null;
  readonly body: string;
  readonly auth: string | null;
}

let sent: Sent[] = [];
// Declines whatever is sent to /v1/decline with 402; accepts everything else with 201.
const fetch = async (req: Request): Promise<Response> => {
  sent.push({ key: req.headers.get('idempotency-key'), body: await req.text(), auth: req.headers.get('authorization') });
  if (new URL(req.url).pathname === '/v1/decline')
    return new Response('{"title":"card declined"}', { status: 402, headers: { 'content-type': 'application/problem+json' } });
  return new Response('{"id":"pay_1"}', { status: 201, headers: { 'content-type': 'application/json' } });
};

let journal: IndexedDbJournal;
const open = (): IndexedDbJournal => {
  journal = indexedDbJournal({ dbName: `oncely-seal-${Date.now()}-${Math.random()}` });
  return journal;
};
afterEach(async () => {
  vi.useRealTimers();
  sent = [];
  await journal.close();
  await new Promise((resolve) => {
    const request = indexedDB.deleteDatabase(journal.dbName);
    request.onsuccess = resolve;
    request.onerror = resolve;
  });
});

const clientOf = (name: string, options: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: BASE_URL, journal, fetch, headers: { authorization: `Bearer ${name}` }, ...options });
const edit = (key: string, change: RowEdit): Promise<void> => editIdbRow(journal.dbName, BASE_URL, key, change);

/** Journals `count` payments as submitted, unsent; returns their keys. */
async function submitted(count: number): Promise<string[]> {
  const writer = clientOf('writer');
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await writer.prepare('POST', 'v1/pay', { json: { amount: 500 + i } });
    await journal.update(writer.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await writer.close();
  return keys;
}

/** Sends one payment to `pathname` and waits until its outcome is journaled; returns its key. */
async function settled(pathname: string): Promise<string> {
  const writer = clientOf('writer');
  const op = await writer.prepare('POST', pathname, { json: { amount: 700 } });
  await op.send().catch(() => undefined);
  expect((await journal.get(writer.scope, op.key))?.state).not.toBe('pending');
  await writer.close();
  return op.key;
}

/** `pending()` and `resume()` of a fresh client, and the keys it sent. */
async function resumed(name = 'resumer', options: Partial<ClientOptions> = {}) {
  const before = sent.length;
  const client = clientOf(name, options);
  const pending = await client.pending();
  const outcomes = await client.resume();
  await client.close();
  return { pending, damaged: outcomes.filter((o) => o.state === 'damaged').map((o) => o.key), keys: sent.slice(before).map((s) => s.key) };
}

const damagedAs = (key: string) => ({ key, state: 'damaged', reason: expect.stringMatching(SEALED) as unknown });

describe('a journal row changed outside oncely, in Chromium', () => {
  it('under another key, or with its key swapped with another row: reported damaged, sent under no key', async () => {
    open();
    const [renamed, a, b, healthy] = (await submitted(4)) as [string, string, string, string];
    const other = newKey();
    await edit(renamed, { key: other });
    await edit(a, { key: 'swapping' });
    await edit(b, { key: a });
    await edit('swapping', { key: b });
    const report = await resumed();
    expect(report.pending.filter((op) => op.state === 'damaged')).toEqual(expect.arrayContaining([damagedAs(other), damagedAs(a), damagedAs(b)]));
    expect(report.damaged.sort()).toEqual([other, a, b].sort());
    expect(report.keys).toEqual([healthy]);
  });

  it('set back to pending after it succeeded or was declined (402), or given a submittedAt while only prepared: never sent', async () => {
    open();
    const paid = await settled('v1/pay');
    const declined = await settled('v1/decline');
    const writer = clientOf('writer');
    const prepared = (await writer.prepare('POST', 'v1/pay', { json: { amount: 900 } })).key;
    await writer.close();
    const [healthy] = (await submitted(1)) as [string];
    await edit(paid, { state: 'pending' });
    await edit(declined, { state: 'pending' });
    await edit(prepared, { submittedAt: Date.now() });
    const report = await resumed();
    expect(report.pending.filter((op) => op.state === 'damaged')).toEqual(expect.arrayContaining([damagedAs(paid), damagedAs(declined), damagedAs(prepared)]));
    expect(report.damaged.sort()).toEqual([paid, declined, prepared].sort());
    expect(report.keys).toEqual([healthy]);
    expect(sent.map((s) => s.key)).toEqual([paid, declined, healthy]);
  });

  it("moved to another scope name of the same origin: never sent with that scope's credentials", async () => {
    open();
    const [moved, healthy] = (await submitted(2)) as [string, string];
    await edit(moved, { scope: `${BASE_URL}#payroll` });
    const payroll = await resumed('payroll', { scope: 'payroll' });
    expect(payroll.pending).toEqual([damagedAs(moved)]);
    expect(payroll.keys).toEqual([]);
    expect((await resumed()).keys).toEqual([healthy]);
    expect(sent.map((s) => s.auth)).toEqual(['Bearer resumer']);
  });

  it('declined with 402, then given lastStatus 400: its key is never given to another request', async () => {
    open();
    const declined = await settled('v1/decline');
    await edit(declined, { lastStatus: 400 });
    const client = clientOf('resumer');
    await expect(client.post('v1/pay', { key: declined, json: { amount: 999999 } })).rejects.toMatchObject({
      code: 'JOURNAL_ERROR',
      damaged: { key: declined },
    });
    await client.close();
    expect(sent.map((s) => s.body)).toEqual(['{"amount":700}']);
  });

  it('expired, then given a fresh createdAt: reported damaged, not sent', async () => {
    open();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - 2 * 86_400_000);
    const [aged] = (await submitted(1)) as [string];
    vi.useRealTimers();
    const [healthy] = (await submitted(1)) as [string];
    await edit(aged, { createdAt: Date.now() });
    const report = await resumed();
    expect(report.pending).toContainEqual(damagedAs(aged));
    expect(report.damaged).toEqual([aged]);
    expect(report.keys).toEqual([healthy]);
  });
});

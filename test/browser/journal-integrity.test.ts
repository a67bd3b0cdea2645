/**
 * In Chromium's own IndexedDB: a journal row edited behind the client's back — its body
 * changed, its URL moved to another origin — is reported damaged and never sent, and the other
 * rows are resumed (test/journal/tampered-rows.test.ts does the same on SQLite and fake-indexeddb).
 */
import { expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { STORE } from '../../src/journal/indexeddb-store.browser.js';

const BASE_URL = 'https://api.oncely.test';

interface Sent {
  readonly key: string | null;
  readonly url: string;
  readonly body: string;
}

const request = <T>(make: () => IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    const req = make();
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

it('reports a row with an edited body and a row moved to another origin as damaged, sends neither, and resumes the rest', async () => {
  const dbName = `oncely-integrity-${Date.now()}`;
  const journal = indexedDbJournal({ dbName });
  const sent: Sent[] = [];
  const fetch = async (req: Request): Promise<Response> => {
    sent.push({ key: req.headers.get('idempotency-key'), url: req.url, body: await req.text() });
    return new Response('{"id":"pay_1"}', { status: 201, headers: { 'content-type': 'application/json' } });
  };
  const writer = createClient({ baseUrl: BASE_URL, journal, fetch });
  const keys: string[] = [];
  for (let i = 0; i < 5; i += 1) {
    const op = await writer.prepare('POST', 'v1/pay', { json: { amount: 500 + i, currency: 'EUR' } });
    await journal.update(writer.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await writer.close();

  const db = await request(() => indexedDB.open(dbName));
  const edit = async (key: string, change: (record: Record<string, unknown>) => Record<string, unknown>): Promise<void> => {
    const storeKey = `${BASE_URL} ${key}`;
    const row = (await request(() => db.transaction(STORE).objectStore(STORE).get(storeKey))) as { record: Record<string, unknown> };
    await request(() =>
      db
        .transaction(STORE, 'readwrite')
        .objectStore(STORE)
        .put({ ...row, record: change(row.record) }, storeKey),
    );
  };
  const [edited, moved] = [keys[1] as string, keys[3] as string];
  await edit(edited, (record) => ({ ...record, body: '{"amount":999999,"currency":"EUR"}' }));
  await edit(moved, (record) => ({ ...record, url: 'https://elsewhere.oncely.test/v1/pay' }));
  db.close();

  const client = createClient({ baseUrl: BASE_URL, journal, fetch });
  const outcomes = await client.resume();
  expect(
    outcomes
      .filter((o) => o.state === 'succeeded')
      .map((o) => o.key)
      .sort(),
  ).toEqual([keys[0], keys[2], keys[4]].sort());
  expect(outcomes.filter((o) => o.state === 'damaged')).toEqual([
    { key: edited, state: 'damaged', reason: expect.stringMatching(/fingerprint/) },
    { key: moved, state: 'damaged', reason: expect.stringMatching(/outside its scope's origin/) },
  ]);
  expect(sent.map((s) => s.key).sort()).toEqual([keys[0], keys[2], keys[4]].sort());
  expect(sent.filter((s) => s.body.includes('999999') || !s.url.startsWith(BASE_URL))).toEqual([]);
  expect((await client.pending()).map((op) => op.state)).toEqual(['damaged', 'damaged']);
  await client.close();
  await journal.close();
  await request(() => indexedDB.deleteDatabase(dbName));
});

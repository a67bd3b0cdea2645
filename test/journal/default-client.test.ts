import 'fake-indexeddb/auto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createClient as createBrowserClient } from '../../src/browser.js';
import { createClient as createNodeClient, sqliteJournal } from '../../src/node.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-default-client-'));
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

describe('default journals of the platform entries', () => {
  it('gives a Node client a SQLite journal at ONCELY_JOURNAL that keeps a prepared operation after close', async () => {
    const path = join(dir, 'state', 'journal.db');
    vi.stubEnv('ONCELY_JOURNAL', path);
    const client = createNodeClient({ baseUrl: 'http://127.0.0.1:9', scope: 'settlement' });
    expect(client.journal.kind).toBe('sqlite');
    expect(client.scope).toBe('http://127.0.0.1:9#settlement');
    const op = await client.prepare('POST', 'v1/payments', { json: { amount: 1250, currency: 'EUR', reference: 'inv-7' } });
    await client.close();

    const reopened = sqliteJournal({ path });
    const record = await reopened.get(client.scope, op.key);
    expect(record?.state).toBe('pending');
    expect(record?.body).toBe('{"amount":1250,"currency":"EUR","reference":"inv-7"}');
    await reopened.close();
  });

  it('refuses a Node client on the shared default journal without a scope, before opening or creating the file', () => {
    const path = join(dir, 'state', 'journal.db');
    vi.stubEnv('ONCELY_JOURNAL', path);
    expect(() => createNodeClient({ baseUrl: 'http://127.0.0.1:9' })).toThrow(
      expect.objectContaining({ code: 'CONFIG', message: expect.stringMatching(/give this program a `scope`.*shared by every program/) }),
    );
    expect(existsSync(path)).toBe(false);
    // A journal of its own needs no name.
    const own = createNodeClient({ baseUrl: 'http://127.0.0.1:9', journal: sqliteJournal({ path: join(dir, 'own.db') }) });
    expect(own.scope).toBe('http://127.0.0.1:9');
  });

  it('gives a browser client an IndexedDB journal named oncely that keeps a prepared operation after close', async () => {
    const client = createBrowserClient({ baseUrl: 'http://127.0.0.1:9' });
    expect(client.journal.kind).toBe('indexeddb');
    const op = await client.prepare('POST', 'v1/payments', { json: { amount: 990, currency: 'EUR', reference: 'cart-3' } });
    await client.close();

    const reopened = indexedDbJournal({ dbName: 'oncely' });
    expect((await reopened.get(client.scope, op.key))?.state).toBe('pending');
    await reopened.close();
  });
});

/**
 * A journal of schema version 3 (one key space, headers journaled by a deny-list) opened by this
 * version: every row gets its URL's origin as its scope, so the client that wrote it still finds
 * it; headers outside the allow-list and URL userinfo leave the file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_V1 } from '../../src/journal/sqlite-schema.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-v3-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const v3Row = (key: string, url: string, headers: Record<string, string>, state = 'pending') => ({
  key,
  method: 'POST',
  url,
  headers: JSON.stringify(headers),
  body: `{"amount":1,"ref":"${key}"}`,
  fingerprint: `sha256:${key}`,
  state,
  created_at: Date.now() - 1000,
  updated_at: Date.now() - 1000,
  submitted_at: Date.now() - 1000,
});

function writeV3(rows: ReturnType<typeof v3Row>[]): void {
  const db = openRawDb(path);
  db.exec(SCHEMA_V1);
  db.exec(MIGRATIONS[1] as string);
  db.exec(MIGRATIONS[2] as string);
  db.pragma(`application_id = ${APPLICATION_ID}`);
  db.pragma('user_version = 3');
  db.pragma('journal_mode = WAL');
  const insert = db.prepare(
    `INSERT INTO oncely_operations (key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at)
     VALUES (@key, @method, @url, @headers, @body, @fingerprint, @state, @created_at, @updated_at, @submitted_at)`,
  );
  for (const row of rows) insert.run(row);
  db.close();
}

describe('SQLite journal schema 3 → 4', () => {
  it('scopes every row by its URL origin and scrubs secrets from headers and URLs', async () => {
    writeV3([
      v3Row('k-a', 'http://127.0.0.1:8787/v1/payments', { 'content-type': 'application/json', 'x-api-key': 'SECRET_v3_api_key' }),
      v3Row('k-b', 'https://user:SECRET_v3_password@api.example.com/v1/pay?x=1', { accept: 'application/json', 'x-auth-token': 'SECRET_v3_token' }),
      v3Row('k-c', 'https://api.example.com/v1/pay', { 'content-type': 'text/plain' }, 'succeeded'),
    ]);
    const journal = sqliteJournal({ path });
    const records = await journal.list();
    expect(records.map((r) => [r.scope, r.key, r.url, r.headers, r.state])).toEqual([
      ['http://127.0.0.1:8787', 'k-a', 'http://127.0.0.1:8787/v1/payments', { 'content-type': 'application/json' }, 'pending'],
      ['https://api.example.com', 'k-b', 'https://api.example.com/v1/pay?x=1', { accept: 'application/json' }, 'pending'],
      ['https://api.example.com', 'k-c', 'https://api.example.com/v1/pay', { 'content-type': 'text/plain' }, 'succeeded'],
    ]);
    // The client that wrote k-a (base URL at that origin, no scope name) still sees it.
    const client = createClient({ baseUrl: 'http://127.0.0.1:8787', journal });
    expect((await client.pending()).map((op) => op.key)).toEqual(['k-a']);
    await client.close();
    await journal.close();

    const bytes = [path, `${path}-wal`]
      .filter(existsSync)
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(['SECRET_v3_api_key', 'SECRET_v3_password', 'SECRET_v3_token'].filter((secret) => bytes.includes(secret))).toEqual([]);
    const raw = openRawDb(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(5);
    raw.close();
  });
});

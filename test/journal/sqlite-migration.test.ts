import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_V1, SCHEMA_VERSION } from '../../src/journal/sqlite-schema.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { OperationState } from '../../src/journal/types.js';
import { V1_PATH, V1_ROWS } from '../fixtures/journal/make-v1.js';
import { V2_PATH, V2_ROWS } from '../fixtures/journal/make-v2.js';
import { createClient } from '../../src/client/create-client.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-migrate-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The scope a row written before scopes existed belongs to: its URL's origin. */
const scopeOfRow = (row: { readonly url: string }): string => new URL(row.url).origin;

/**
 * The record a fixture row reads back as after migration: unchanged, in the scope of its URL's
 * origin, and submitted when it was journaled.
 */
const migrated = (row: (typeof V1_ROWS)[number] | (typeof V2_ROWS)[number]) => ({
  scope: scopeOfRow(row),
  key: row.key,
  method: row.method,
  url: row.url,
  headers: row.headers,
  body: row.body,
  fingerprint: row.fingerprint,
  state: row.state,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  submittedAt: row.created_at,
  attempts: row.attempts,
  lastStatus: row.last_status,
  result: row.result,
});

const inspect = (file: string) => {
  const db = openRawDb(file, { readonly: true });
  try {
    return {
      version: db.pragma('user_version', { simple: true }) as number,
      columns: (db.pragma('table_info(oncely_operations)') as { name: string }[]).map((c) => c.name),
    };
  } finally {
    db.close();
  }
};

describe('SQLite journal schema migration', () => {
  it('starts from a fixture written by schema version 1, which has no claim columns', () => {
    expect(inspect(V1_PATH)).toEqual({ version: 1, columns: expect.not.arrayContaining(['claim_owner']) as unknown });
    expect(SCHEMA_VERSION).toBe(5);
  });

  it('migrates a version 1 journal to the current version and reads every operation back unchanged, as submitted, in its origin scope', async () => {
    copyFileSync(V1_PATH, path);
    const journal = sqliteJournal({ path });
    const records = await journal.list();
    expect(records.map((r) => r.key)).toEqual(V1_ROWS.map((row) => row.key));
    V1_ROWS.forEach((row, i) => {
      expect(records[i]).toEqual(migrated(row));
    });
    for (const row of V1_ROWS) expect(await journal.get(scopeOfRow(row), row.key)).toEqual(migrated(row));
    expect(await journal.damaged()).toEqual([]);
    await journal.close();
    expect(inspect(path)).toEqual({
      version: 5,
      columns: expect.arrayContaining(['scope', 'claim_owner', 'claimed_until', 'submitted_at', 'claim_process', 'seal']) as unknown,
    });
  });

  it('lets two owners contend for a migrated pending operation: one claim wins', async () => {
    copyFileSync(V1_PATH, path);
    const a = sqliteJournal({ path });
    const b = sqliteJournal({ path });
    const pendingKey = V1_ROWS[0].key;
    const scope = scopeOfRow(V1_ROWS[0]);
    expect(await a.claim(scope, pendingKey, 'a', 60_000)).toBe(true);
    expect(await b.claim(scope, pendingKey, 'b', 60_000)).toBe(false);
    expect(await b.claim(scopeOfRow(V1_ROWS[2]), V1_ROWS[2].key, 'b', 60_000)).toBe(false);
    expect((await b.list({ state: OperationState.Pending })).length).toBe(2);
    await a.close();
    await b.close();
  });

  it('opens an already migrated journal again without touching its records', async () => {
    copyFileSync(V1_PATH, path);
    const first = sqliteJournal({ path });
    await first.update(scopeOfRow(V1_ROWS[1]), V1_ROWS[1].key, { attempts: 5 });
    const before = await first.list();
    await first.close();
    const second = sqliteJournal({ path });
    expect(await second.list()).toEqual(before);
    await second.close();
    expect(inspect(path).version).toBe(5);
  });

  it('refuses a journal from a newer schema version with a JournalError and leaves the file as it was', async () => {
    const journal = sqliteJournal({ path });
    await journal.list();
    await journal.close();
    const raw = openRawDb(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const bytes = readFileSync(path);

    const newer = sqliteJournal({ path });
    const error = await newer.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalError);
    expect((error as JournalError).code).toBe('JOURNAL_ERROR');
    expect((error as JournalError).path).toBe(path);
    expect((error as JournalError).message).toMatch(/newer/);
    expect((error as JournalError).hint).toMatch(/upgrade oncely/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(inspect(path).version).toBe(SCHEMA_VERSION + 1);
  });
});

describe('SQLite journal schema migration from version 2 (submitted_at)', () => {
  it('starts from a fixture written by schema version 2, which has claim columns but no submitted_at', () => {
    expect(inspect(V2_PATH)).toEqual({
      version: 2,
      columns: expect.arrayContaining(['claim_owner', 'claimed_until']) as unknown,
    });
    expect(inspect(V2_PATH).columns).not.toContain('submitted_at');
  });

  it('migrates a version 2 journal to the current version: every row unchanged, in its origin scope, and submitted when it was journaled', async () => {
    copyFileSync(V2_PATH, path);
    const journal = sqliteJournal({ path });
    const records = await journal.list();
    expect(records).toEqual(V2_ROWS.map(migrated));
    for (const row of V2_ROWS) expect(await journal.get(scopeOfRow(row), row.key)).toEqual(migrated(row));
    await journal.close();
    expect(inspect(path)).toEqual({ version: 5, columns: expect.arrayContaining(['scope', 'submitted_at', 'claim_process', 'seal']) as unknown });
  });

  it('keeps what a version 2 resume() did: a client resumes both pending operations of the migrated journal', async () => {
    copyFileSync(V2_PATH, path);
    const journal = sqliteJournal({ path });
    const sent: string[] = [];
    const client = createClient({
      baseUrl: 'http://127.0.0.1:8787',
      journal,
      // The fixture is months old: a retention of years keeps its pending rows unexpired.
      keyTtlMs: 10 * 365 * 24 * 3_600_000,
      fetch: async (request) => {
        sent.push(`${request.method} ${request.headers.get('idempotency-key')}`);
        return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
      },
    });
    const outcomes = await client.resume();
    expect(outcomes.map((o) => [o.key, o.state])).toEqual([
      [V2_ROWS[0].key, 'succeeded'],
      [V2_ROWS[1].key, 'succeeded'],
    ]);
    expect(sent.sort()).toEqual([`POST ${V2_ROWS[0].key}`, `DELETE ${V2_ROWS[1].key}`].sort());
    await client.close();
    await journal.close();
  });

  it('stores operations prepared after the migration as not submitted', async () => {
    copyFileSync(V2_PATH, path);
    const journal = sqliteJournal({ path });
    const { record } = await journal.put({
      ...V2_ROWS[0],
      scope: scopeOfRow(V2_ROWS[0]),
      key: '0193b8a0-2222-7000-8000-000000000009',
      headers: {},
      fingerprint: 'sha256:new',
    });
    expect(record.submittedAt).toBeNull();
    expect((await journal.get(record.scope, record.key))?.submittedAt).toBeNull();
    await journal.close();
  });
});

describe('SQLite journal schema migration from version 3 (scopes)', () => {
  /** A version 3 journal, built from the SQL of versions 1 to 3, holding `rows`. */
  const writeV3 = (file: string, rows: ReadonlyArray<{ key: string; url: string; headers: Record<string, string>; state: string }>): void => {
    const db = openRawDb(file);
    db.exec(SCHEMA_V1);
    for (const version of [1, 2]) {
      const step = MIGRATIONS[version];
      if (typeof step !== 'string') throw new Error(`expected the ${version} → ${version + 1} migration to be SQL`);
      db.exec(step);
    }
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma('user_version = 3');
    const insert = db.prepare(
      `INSERT INTO oncely_operations (key, method, url, headers, body, fingerprint, state, created_at, updated_at, attempts, submitted_at)
       VALUES (@key, 'POST', @url, @headers, '{"amount":1}', 'sha256:v3', @state, 1764800000000, 1764800000000, 0, 1764800000000)`,
    );
    for (const row of rows) insert.run({ ...row, headers: JSON.stringify(row.headers) });
    db.close();
  };

  it('gives each row the scope of its URL origin and keeps only allow-listed headers and no URL userinfo', async () => {
    writeV3(path, [
      {
        key: '0193b8a0-3333-7000-8000-000000000001',
        url: 'http://127.0.0.1:8787/v1/payments',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': 'SECRET-1', 'x-tenant': 'acme' },
        state: 'pending',
      },
      {
        key: '0193b8a0-3333-7000-8000-000000000002',
        url: 'https://alice:SECRET-2@api.example.com/v1/refunds?page=2',
        headers: { 'content-type': 'application/json', authorization: 'Bearer SECRET-3' },
        state: 'succeeded',
      },
    ]);
    const journal = sqliteJournal({ path });
    const records = await journal.list();
    expect(records.map((r) => [r.scope, r.key, r.url, r.headers])).toEqual([
      [
        'http://127.0.0.1:8787',
        '0193b8a0-3333-7000-8000-000000000001',
        'http://127.0.0.1:8787/v1/payments',
        { 'content-type': 'application/json', accept: 'application/json' },
      ],
      ['https://api.example.com', '0193b8a0-3333-7000-8000-000000000002', 'https://api.example.com/v1/refunds?page=2', { 'content-type': 'application/json' }],
    ]);
    expect(JSON.stringify(records)).not.toMatch(/SECRET/);
    expect((await journal.list({ scope: 'http://127.0.0.1:8787', state: OperationState.Pending })).map((r) => r.key)).toEqual([
      '0193b8a0-3333-7000-8000-000000000001',
    ]);
    expect(await journal.damaged()).toEqual([]);
    await journal.close();
    expect(inspect(path)).toEqual({ version: 5, columns: expect.arrayContaining(['scope', 'claim_process', 'seal']) as unknown });
  });
});

import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { SCHEMA_VERSION } from '../../src/journal/sqlite-schema.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { OperationState } from '../../src/journal/types.js';
import { V1_PATH, V1_ROWS } from '../fixtures/journal/make-v1.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-migrate-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const inspect = (file: string) => {
  const db = new Database(file, { readonly: true });
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
    expect(SCHEMA_VERSION).toBe(2);
  });

  it('migrates a version 1 journal to version 2 and reads every operation back unchanged', async () => {
    copyFileSync(V1_PATH, path);
    const journal = sqliteJournal({ path });
    const records = await journal.list();
    expect(records.map((r) => r.key)).toEqual(V1_ROWS.map((row) => row.key));
    V1_ROWS.forEach((row, i) => {
      expect(records[i]).toEqual({
        key: row.key,
        method: row.method,
        url: row.url,
        headers: row.headers,
        body: row.body,
        fingerprint: row.fingerprint,
        state: row.state,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        attempts: row.attempts,
        lastStatus: row.last_status,
        result: row.result,
      });
    });
    await journal.close();
    expect(inspect(path)).toEqual({ version: 2, columns: expect.arrayContaining(['claim_owner', 'claimed_until']) as unknown });
  });

  it('lets two owners contend for a migrated pending operation: one claim wins', async () => {
    copyFileSync(V1_PATH, path);
    const a = sqliteJournal({ path });
    const b = sqliteJournal({ path });
    const pendingKey = V1_ROWS[0].key;
    expect(await a.claim(pendingKey, 'a', 60_000)).toBe(true);
    expect(await b.claim(pendingKey, 'b', 60_000)).toBe(false);
    expect(await b.claim(V1_ROWS[2].key, 'b', 60_000)).toBe(false);
    expect((await b.list({ state: OperationState.Pending })).length).toBe(2);
    await a.close();
    await b.close();
  });

  it('opens an already migrated journal again without touching its records', async () => {
    copyFileSync(V1_PATH, path);
    const first = sqliteJournal({ path });
    await first.update(V1_ROWS[1].key, { attempts: 5 });
    const before = await first.list();
    await first.close();
    const second = sqliteJournal({ path });
    expect(await second.list()).toEqual(before);
    await second.close();
    expect(inspect(path).version).toBe(2);
  });

  it('refuses a journal from a newer schema version with a JournalError and leaves the file as it was', async () => {
    const journal = sqliteJournal({ path });
    await journal.list();
    await journal.close();
    const raw = new Database(path);
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

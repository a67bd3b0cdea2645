/**
 * The SQLite journal's write-behind (`Journal.updateLater`): `post()` resolves once the answer is
 * in hand, and its outcome is written right after. Every later call on the journal sees it, another
 * connection may see it pending (and claimed) for a moment, `close()` commits it whatever lock
 * another process holds meanwhile, and `durability: 'power'` never leaves it behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/index.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-write-behind-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const answer = async (): Promise<Response> => new Response('{"id":"pay_1"}', { status: 201, headers: { 'content-type': 'application/json' } });

/** The row's state and claim as another connection (another process) reads it now. */
function seenElsewhere(key: string): { state: string; claim_owner: string | null } | undefined {
  const other = openRawDb(path, { readonly: true });
  try {
    return other.prepare('SELECT state, claim_owner FROM oncely_operations WHERE key = ?').get(key) as
      { state: string; claim_owner: string | null } | undefined;
  } finally {
    other.close();
  }
}

describe('SQLite journal: the outcome of post() written behind', () => {
  it('orders the outcome before every later call of the journal, while another connection may still read it pending and claimed', async () => {
    const journal = sqliteJournal({ path });
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: answer });
    const result = await client.post('v1/payments', { json: { amount: 1 } });
    expect(result.status).toBe(201);
    expect(seenElsewhere(result.key)).toEqual({ state: 'pending', claim_owner: expect.any(String) });
    expect(await client.pending()).toEqual([]);
    expect(await journal.get(client.scope, result.key)).toMatchObject({ state: 'succeeded', attempts: 1, lastStatus: 201, result: { status: 201 } });
    expect(seenElsewhere(result.key)).toEqual({ state: 'succeeded', claim_owner: null });
    await journal.close();
  });

  it('commits the outcome on the next turn of the event loop when no other call comes', async () => {
    const journal = sqliteJournal({ path });
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: answer });
    const { key } = await client.post('v1/payments', { json: { amount: 1 } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seenElsewhere(key)?.state).toBe('succeeded');
    await journal.close();
  });

  it('commits the outcome before close() resolves, waiting out a lock another process holds meanwhile', async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 5_000 });
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: answer });
    const { key } = await client.post('v1/payments', { json: { amount: 1 } });
    const other = openRawDb(path);
    other.exec('BEGIN IMMEDIATE');
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        other.exec('ROLLBACK');
        other.close();
        resolve();
      }, 200),
    );
    await journal.close();
    await released;
    expect(seenElsewhere(key)).toEqual({ state: 'succeeded', claim_owner: null });
  });

  it("writes the outcome before post() resolves under durability 'power'", async () => {
    const journal = sqliteJournal({ path, durability: 'power' });
    expect(journal.updateLater).toBeUndefined();
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: answer });
    const { key } = await client.post('v1/payments', { json: { amount: 1 } });
    expect(seenElsewhere(key)).toEqual({ state: 'succeeded', claim_owner: null });
    await journal.close();
  });

  it('rejects a write-behind asked for after close()', async () => {
    const journal = sqliteJournal({ path });
    await journal.close();
    await expect(journal.updateLater?.('http://api.test', 'k', { attempts: 1 })).rejects.toThrow(/closed/);
  });
});

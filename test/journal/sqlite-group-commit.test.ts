import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { OperationState, type StoredResult } from '../../src/journal/types.js';
import { operation } from '../contract/journal.contract.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-group-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const ok: StoredResult = { status: 201, headers: {}, body: '{}', replayed: false };

describe('SQLite journal group commit', () => {
  it('commits calls made in the same tick together, and a call that throws rolls back alone', async () => {
    const journal = sqliteJournal({ path });
    const ops = Array.from({ length: 5 }, () => operation());
    await journal.putMany(ops);
    const unserialisable = { ...ok, body: 1n } as unknown as StoredResult;
    const settled = await Promise.allSettled([
      journal.update(ops[0]!.scope, ops[0]!.key, { state: OperationState.Succeeded, result: ok }),
      journal.update(ops[1]!.scope, ops[1]!.key, { state: OperationState.Succeeded, result: unserialisable }),
      journal.update(ops[2]!.scope, ops[2]!.key, { state: OperationState.Failed, lastStatus: 422 }),
      journal.put(operation({ key: ops[3]!.key, body: 'other' })),
      journal.claim(ops[4]!.scope, ops[4]!.key, 'me', 60_000),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(JournalError);
    await journal.close();

    const reader = sqliteJournal({ path });
    const states = (await reader.list()).map((r) => r.state);
    expect(states).toEqual(['succeeded', 'pending', 'failed', 'pending', 'pending']);
    expect((await reader.get(ops[3]!.scope, ops[3]!.key))?.body).toBe(ops[3]!.body);
    expect(await reader.claim(ops[4]!.scope, ops[4]!.key, 'someone-else', 60_000)).toBe(false);
    await reader.close();
  });

  it('undoes all of a putMany that fails part-way, alone or grouped with other calls', async () => {
    const journal = sqliteJournal({ path });
    const broken = operation({ headers: { 'x-bad': 1n } as unknown as Record<string, string> });
    const [first, second, bystander] = [operation(), operation(), operation()];
    await expect(journal.putMany([first, broken])).rejects.toBeInstanceOf(JournalError);
    const grouped = await Promise.allSettled([journal.putMany([second, broken]), journal.put(bystander)]);
    expect(grouped.map((g) => g.status)).toEqual(['rejected', 'fulfilled']);
    expect((await journal.list()).map((r) => r.key)).toEqual([bystander.key]);
    await journal.close();
  });

  it('rejects every call of a group with a JournalError when the file stays locked, and loses none once it is free', async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 100 });
    await journal.list();
    const other = openRawDb(path);
    other.exec('BEGIN IMMEDIATE');
    const ops = Array.from({ length: 3 }, () => operation());
    const settled = await Promise.allSettled(ops.map((op) => journal.put(op)));
    other.exec('ROLLBACK');
    other.close();
    expect(settled.every((s) => s.status === 'rejected' && s.reason instanceof JournalError && /locked/.test(String(s.reason.message)))).toBe(true);
    expect(await journal.list()).toEqual([]);
    const retried = await Promise.all(ops.map((op) => journal.put(op)));
    expect(retried.map((r) => r.created)).toEqual([true, true, true]);
    await journal.close();
  });

  it('runs calls made just before close and rejects calls made after it', async () => {
    const journal = sqliteJournal({ path });
    const op = operation();
    const put = journal.put(op);
    await journal.close();
    expect((await put).created).toBe(true);
    await expect(journal.get(op.scope, op.key)).rejects.toBeInstanceOf(JournalError);
    const reader = sqliteJournal({ path });
    expect((await reader.get(op.scope, op.key))?.key).toBe(op.key);
    await reader.close();
  });
});

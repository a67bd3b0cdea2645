/**
 * `put` with a claim (what `post()` asks for): the record is created already held by its owner,
 * in the same write, so that no other owner (another process sharing the file) can take it
 * between the put and the first attempt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryJournal } from '../../src/journal/memory.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';
import { operation } from '../contract/journal.contract.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Two handles on one store: for SQLite two connections to one file, as two processes have. */
const backends: Record<string, () => [Journal, Journal]> = {
  memory: () => {
    const journal = memoryJournal();
    return [journal, journal];
  },
  sqlite: () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncely-claim-on-put-'));
    dirs.push(dir);
    return [sqliteJournal({ path: join(dir, 'j.db') }), sqliteJournal({ path: join(dir, 'j.db') })];
  },
};

describe.each(Object.keys(backends))('put with a claim (%s)', (name) => {
  it('creates the record held by its owner: another owner is refused until it is released', async () => {
    const [mine, other] = backends[name]!();
    const op = operation();
    const outcome = await mine.put({ ...op, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } });
    expect(outcome).toMatchObject({ created: true, claimed: true });
    expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(false);
    expect(await mine.claim(op.scope, op.key, 'process-a', 60_000)).toBe(true);
    await mine.release(op.scope, op.key, 'process-a');
    expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
    await mine.close();
    await other.close();
  });

  it('claims nothing when the key exists already: the existing record and its holder are untouched', async () => {
    const [mine, other] = backends[name]!();
    const op = operation();
    await other.put({ ...op, submitted: true });
    expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
    const outcome = await mine.put({ ...op, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } });
    expect(outcome.created).toBe(false);
    expect(outcome.claimed).toBeUndefined();
    expect(await mine.claim(op.scope, op.key, 'process-a', 60_000)).toBe(false);
    await mine.close();
    await other.close();
  });

  it('stores an unclaimed record when no claim is asked for', async () => {
    const [mine, other] = backends[name]!();
    const op = operation();
    expect((await mine.put(op)).claimed).toBeUndefined();
    expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
    await mine.close();
    await other.close();
  });
});

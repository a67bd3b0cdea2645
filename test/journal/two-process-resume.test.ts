/**
 * Two real processes resume one SQLite journal at the same moment: claims must give every
 * pending operation to exactly one of them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { spawnClient, type Child } from './fixtures/child-process.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

const OPERATIONS = 50;

let dir: string;
let journalPath: string;
let server: EffectServer;
const children: Child[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-two-'));
  journalPath = join(dir, 'journal.db');
  // Each answer takes a while, so both resumers are busy at the same time.
  server = await startEffectServer({ delayMs: 40 });
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const start = (args: string[], name: string, extra: Record<string, string> = {}): Child => {
  const child = spawnClient(args, { ONCELY_JOURNAL: journalPath, ONCELY_TEST_PROCESS: name, ...extra });
  children.push(child);
  return child;
};

describe('SQLite journal shared by two resuming processes', () => {
  it(`sends each of ${OPERATIONS} pending operations from exactly one process, once`, async () => {
    const preparer = start(['submit-many', server.url, 'v1/pay', String(OPERATIONS)], 'preparer');
    const { keys } = await preparer.next((e) => e.event === 'journaled-many', 'the operations to be journaled', 40_000);
    expect(await preparer.exited).toBe(0);
    expect(server.attempts).toHaveLength(0);
    const journaled = keys as string[];
    expect(new Set(journaled).size).toBe(OPERATIONS);

    const a = start(['resume', server.url], 'resumer-a', { ONCELY_TEST_BARRIER: '1' });
    const b = start(['resume', server.url], 'resumer-b', { ONCELY_TEST_BARRIER: '1' });
    await Promise.all([a.next((e) => e.event === 'ready', 'resumer a', 40_000), b.next((e) => e.event === 'ready', 'resumer b', 40_000)]);
    a.process.stdin.write('go\n');
    b.process.stdin.write('go\n');
    const [doneA, doneB] = await Promise.all([
      a.next((e) => e.event === 'resumed', 'resumer a to finish', 40_000),
      b.next((e) => e.event === 'resumed', 'resumer b to finish', 40_000),
    ]);
    expect([await a.exited, await b.exited]).toEqual([0, 0]);
    expect([doneA.pending, doneB.pending]).toEqual([0, 0]);

    for (const key of journaled) {
      const senders = new Set(server.attempts.filter((attempt) => attempt.key === key).map((attempt) => attempt.process));
      expect({ key, senders: [...senders].length, effects: server.effects.get(key) }).toEqual({ key, senders: 1, effects: 1 });
    }
    expect(server.attempts).toHaveLength(OPERATIONS);
    expect([...server.effects.keys()].sort()).toEqual([...journaled].sort());

    const reported = [...(doneA.sent as { key: string }[]), ...(doneB.sent as { key: string }[])].map((s) => s.key);
    expect(reported.sort()).toEqual([...journaled].sort());

    const journal = sqliteJournal({ path: journalPath });
    expect(await journal.list({ state: 'pending' })).toEqual([]);
    expect(await journal.list({ state: 'succeeded' })).toHaveLength(OPERATIONS);
    await journal.close();
    console.info(`two-process resume split: a sent ${(doneA.sent as unknown[]).length}, b sent ${(doneB.sent as unknown[]).length}`);
  }, 120_000);
});

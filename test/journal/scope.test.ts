/**
 * One journal file, several services: each client sees, sends and collides with its own scope's
 * operations only (origin of its base URL + its `scope` name), and its credentials go to its own
 * origin only. Real processes on one SQLite file, real servers on loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { spawnScript, type Child } from './fixtures/child-process.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/scope-child.ts', import.meta.url));

let dir: string;
let journalPath: string;
let servers: EffectServer[];
const children: Child[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-scope-'));
  journalPath = join(dir, 'journal.db');
  servers = [await startEffectServer(), await startEffectServer()];
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  for (const server of servers) await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the fixture to its exit and returns its last event of `event`. */
async function run(args: string[], event: 'submitted' | 'resumed'): Promise<Record<string, unknown>> {
  const child = spawnScript(SCRIPT, args, { ONCELY_JOURNAL: journalPath });
  children.push(child);
  const found = await child.next((e) => e.event === event, event, 40_000);
  expect(await child.exited).toBe(0);
  return found;
}

type Outcome = { key: string; state: string; replayed?: boolean };

describe('a journal file shared by services of different origins and scopes', () => {
  it('resumes only its own operations, sends its token to its own origin only, and leaves the others pending', async () => {
    const [a, b] = servers as [EffectServer, EffectServer];
    const submittedA = (await run(['submit', a.url, 'token-A', '-', 'v1/pay', '3'], 'submitted')).keys as string[];
    const submittedB = (await run(['submit', b.url, 'token-B', '-', 'v1/pay', '2'], 'submitted')).keys as string[];

    // Service B resumes first: it sends its two operations to B, nothing to A.
    const resumedB = (await run(['resume', b.url, 'token-B'], 'resumed')).outcomes as Outcome[];
    expect(resumedB.map((o) => [o.key, o.state]).sort()).toEqual(submittedB.map((key) => [key, 'succeeded']).sort());
    expect(a.attempts).toEqual([]);
    expect(b.attempts.map((attempt) => [attempt.key, attempt.process]).sort()).toEqual(submittedB.map((key) => [key, 'token-B']).sort());

    // A's operations were neither sent nor settled by B: A's own resume finds and sends them.
    const resumedA = (await run(['resume', a.url, 'token-A'], 'resumed')).outcomes as Outcome[];
    expect(resumedA.map((o) => [o.key, o.state]).sort()).toEqual(submittedA.map((key) => [key, 'succeeded']).sort());
    expect(a.attempts.map((attempt) => attempt.process)).toEqual(['token-A', 'token-A', 'token-A']);
    expect(b.attempts).toHaveLength(2);
    for (const server of [a, b]) for (const count of server.effects.values()) expect(count).toBe(1);
  }, 120_000);

  it('keeps two scope names at one origin apart: each resumes its own', async () => {
    const [a] = servers as [EffectServer];
    const payroll = (await run(['submit', a.url, 'token-P', 'payroll', 'v1/pay', '2'], 'submitted')).keys as string[];
    const refunds = (await run(['submit', a.url, 'token-R', 'refunds', 'v1/pay', '2'], 'submitted')).keys as string[];

    const resumed = (await run(['resume', a.url, 'token-P', 'payroll'], 'resumed')).outcomes as Outcome[];
    expect(resumed.map((o) => o.key).sort()).toEqual([...payroll].sort());
    expect(a.attempts.map((attempt) => attempt.process)).toEqual(['token-P', 'token-P']);

    // A client of the origin with no scope name is a third scope: it sees neither.
    expect((await run(['resume', a.url, 'token-X'], 'resumed')).outcomes).toEqual([]);
    const journal = sqliteJournal({ path: journalPath });
    const pending = await journal.list({ state: 'pending' });
    await journal.close();
    expect(pending.map((record) => [record.scope, record.key]).sort()).toEqual(refunds.map((key) => [`${a.url}#refunds`, key]).sort());
  }, 120_000);

  it('makes the same natural key in two scopes two operations, each executed once by its own server', async () => {
    const [a, b] = servers as [EffectServer, EffectServer];
    const keysA = (await run(['submit', a.url, 'token-A', '-', 'v1/pay', '1', 'payroll-2026-12'], 'submitted')).keys as string[];
    // Same natural key, same namespace, other body (another amount would be a KeyReusedError in one scope).
    const keysB = (await run(['submit', b.url, 'token-B', '-', 'v1/pay', '1', 'payroll-2026-12'], 'submitted')).keys as string[];
    expect(keysA).toEqual(keysB);

    const journal = sqliteJournal({ path: journalPath });
    expect((await journal.list({ state: 'pending' })).map((record) => record.scope).sort()).toEqual([`${a.url}#scope-test`, `${b.url}#scope-test`].sort());
    await journal.close();

    await run(['resume', a.url, 'token-A'], 'resumed');
    await run(['resume', b.url, 'token-B'], 'resumed');
    expect([a.effects.get(keysA[0] as string), b.effects.get(keysA[0] as string)]).toEqual([1, 1]);
    expect([a.attempts.map((x) => x.process), b.attempts.map((x) => x.process)]).toEqual([['token-A'], ['token-B']]);
  }, 120_000);
});

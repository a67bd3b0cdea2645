/**
 * Real-process crash tests: a client process journaling to SQLite is SIGKILLed at each moment
 * an operation can be lost or doubled; a fresh process then resumes from the same file. The
 * fixture server shows one effect per operation, and the same key and body bytes on every
 * attempt, whichever process sent it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { scopeOf } from '../../src/journal/types.js';
import { kill, spawnClient, type Child } from './fixtures/child-process.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

let dir: string;
let journalPath: string;
let server: EffectServer;
const children: Child[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-crash-'));
  journalPath = join(dir, 'journal.db');
  server = await startEffectServer();
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

// A short claim, so that the resuming process may take over soon after the kill.
const env = (name: string): Record<string, string> => ({ ONCELY_JOURNAL: journalPath, ONCELY_TEST_PROCESS: name, ONCELY_TEST_CLAIM_TTL_MS: '1500' });

const start = (args: string[], name: string, extra: Record<string, string> = {}): Child => {
  const child = spawnClient(args, { ...env(name), ...extra });
  children.push(child);
  return child;
};

/** Resumes in a fresh process and checks exactly-once and byte-identical attempts for `key`. */
async function resumeAndVerify(key: string): Promise<void> {
  const resumer = start(['resume', server.url], 'resumer');
  const done = await resumer.next((e) => e.event === 'resumed', 'resume to finish', 40_000);
  expect(await resumer.exited).toBe(0);
  expect(done.pending).toBe(0);

  const journal = sqliteJournal({ path: journalPath });
  const record = await journal.get(scopeOf(server.url, 'client-child'), key);
  await journal.close();
  expect(record?.state).toBe('succeeded');

  const attempts = server.attempts.filter((a) => a.key === key);
  expect(server.effects.get(key)).toBe(1);
  expect([...server.effects.values()].reduce((a, b) => a + b, 0)).toBe(1);
  expect(server.attempts.every((a) => a.key === key)).toBe(true);
  expect(attempts.some((a) => a.process === 'resumer')).toBe(true);
  for (const attempt of attempts) expect(attempt.body.equals(Buffer.from(record!.body!, 'utf8'))).toBe(true);
}

describe('SQLite journal: a client killed with SIGKILL resumes in a fresh process', () => {
  it('sends an operation whose post() was killed just before its first attempt, once, with its journaled key and bytes', async () => {
    const child = start(['post-wait', server.url, 'v1/pay'], 'victim');
    const { key } = await child.next((e) => e.event === 'attempt', 'the first attempt to start', 30_000);
    await kill(child);
    expect(server.attempts).toHaveLength(0);
    await resumeAndVerify(String(key));
  }, 90_000);

  it('never sends an operation that was only prepared when the process was killed', async () => {
    const child = start(['prepare-wait', server.url, 'v1/pay'], 'victim');
    const { key } = await child.next((e) => e.event === 'journaled', 'the operation to be journaled', 30_000);
    await kill(child);
    const resumer = start(['resume', server.url], 'resumer');
    const done = await resumer.next((e) => e.event === 'resumed', 'resume to finish', 40_000);
    expect(await resumer.exited).toBe(0);
    expect(done).toMatchObject({ sent: [], pending: 0, prepared: 1 });
    expect(server.attempts).toHaveLength(0);
    const journal = sqliteJournal({ path: journalPath });
    expect(await journal.get(scopeOf(server.url, 'client-child'), String(key))).toMatchObject({ state: 'pending', submittedAt: null, attempts: 0 });
    await journal.close();
  }, 90_000);

  it('never executes twice when killed after the request reached the server and before the response', async () => {
    const child = start(['send', server.url, 'v1/hold'], 'victim');
    const { key } = await child.next((e) => e.event === 'journaled', 'the operation to be journaled', 30_000);
    await server.until(() => server.attempts.some((a) => a.key === key && a.outcome === 'held'), 'the held request');
    await kill(child);
    await resumeAndVerify(String(key));
    const outcomes = server.attempts.map((a) => `${a.process}:${a.outcome}`);
    expect(outcomes[0]).toBe('victim:held');
    expect(outcomes.slice(1).every((o) => o === 'resumer:replayed')).toBe(true);
  }, 90_000);

  it('executes once an operation whose process was killed the moment post() answered, before the outcome was written: resume() gets the replay', async () => {
    const child = start(['post-die', server.url, 'v1/pay'], 'victim');
    const posted = await child.next((e) => e.event === 'posted', 'post() to answer', 30_000);
    expect(await child.exited).toBe('SIGKILL');
    expect(posted).toMatchObject({ status: 201, replayed: false });
    const key = String(posted.key);
    // The caller had its answer; the journal still says pending (the outcome is written behind).
    const journal = sqliteJournal({ path: journalPath });
    expect(await journal.get(scopeOf(server.url, 'client-child'), key)).toMatchObject({ state: 'pending', result: null });
    await journal.close();
    const resumer = start(['resume', server.url], 'resumer');
    const done = await resumer.next((e) => e.event === 'resumed', 'resume to finish', 40_000);
    expect(done.sent).toEqual([{ key, state: 'succeeded', replayed: true }]);
    await resumeAndVerify(key);
    expect(server.attempts.map((a) => `${a.process}:${a.outcome}`)).toEqual(['victim:executed', 'resumer:replayed']);
  }, 90_000);

  it("writes the outcome before post() answers under durability 'power': killed the moment it answered, nothing is left to resume", async () => {
    const child = start(['post-die', server.url, 'v1/pay'], 'victim', { ONCELY_TEST_DURABILITY: 'power' });
    const posted = await child.next((e) => e.event === 'posted', 'post() to answer', 30_000);
    expect(await child.exited).toBe('SIGKILL');
    const journal = sqliteJournal({ path: journalPath });
    expect(await journal.get(scopeOf(server.url, 'client-child'), String(posted.key))).toMatchObject({ state: 'succeeded', result: { status: 201 } });
    await journal.close();
    const resumer = start(['resume', server.url], 'resumer');
    expect(await resumer.next((e) => e.event === 'resumed', 'resume to finish', 40_000)).toMatchObject({ sent: [], pending: 0 });
    expect(server.attempts.map((a) => `${a.process}:${a.outcome}`)).toEqual(['victim:executed']);
  }, 90_000);

  it('finishes an operation whose process was killed while waiting out a Retry-After', async () => {
    const child = start(['send', server.url, 'v1/busy'], 'victim');
    const { key } = await child.next((e) => e.event === 'journaled', 'the operation to be journaled', 30_000);
    const retry = await child.next((e) => e.event === 'retry' && e.key === key, 'the Retry-After wait');
    expect(retry.status).toBe(503);
    expect(Number(retry.delayMs)).toBeGreaterThanOrEqual(29_000);
    await kill(child);
    await resumeAndVerify(String(key));
    expect(server.attempts.map((a) => `${a.process}:${a.outcome}`)).toEqual(['victim:busy', 'resumer:executed']);
  }, 90_000);
});

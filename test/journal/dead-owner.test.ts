/**
 * A claim whose process is provably dead is void at once: a process restarted right after a
 * SIGKILL resumes the operation on its first `resume()`, without waiting out the claim. A claim
 * of a live process, or of another host, still holds.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { thisProcess } from '../../src/journal/process-owner.node.js';
import { sqliteJournal, type SqliteJournal } from '../../src/journal/sqlite.node.js';
import { kill, spawnScript, type Child } from './fixtures/child-process.js';
import { startEffectServer, type EffectServer } from './fixtures/effect-server.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/scope-child.ts', import.meta.url));
const SCOPE = 'http://127.0.0.1:8787';

let dir: string;
let journalPath: string;
const children: Child[] = [];
const cleanups: Array<() => Promise<void>> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-dead-owner-'));
  journalPath = join(dir, 'journal.db');
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const start = (args: string[]): Child => {
  const child = spawnScript(SCRIPT, args, { ONCELY_JOURNAL: journalPath });
  children.push(child);
  return child;
};

describe('a process restarted after a SIGKILL mid-request', () => {
  it('completes the operation on its first resume(), one effect, same key and bytes', async () => {
    const server: EffectServer = await startEffectServer();
    cleanups.push(() => server.close());
    // /v1/hold executes the payment and swallows the answer: the kill lands while the owner waits.
    const owner = start(['send', server.url, 'token-A', '-', 'v1/hold']);
    const { key } = await owner.next((e) => e.event === 'journaled', 'the operation to be journaled', 40_000);
    await server.until(() => server.attempts.some((attempt) => attempt.outcome === 'held'), 'the first attempt to reach the server');
    await kill(owner);
    const killedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 100));

    // The owner's claim (10 s by default) is still running: only its death can free it.
    const resumer = start(['resume', server.url, 'token-A', '-', 'v1/hold']);
    const done = await resumer.next((e) => e.event === 'resumed', 'the resume to finish', 40_000);
    expect(await resumer.exited).toBe(0);
    expect((done.outcomes as Array<{ key: string; state: string }>).map((o) => [o.key, o.state])).toEqual([[key, 'succeeded']]);
    expect(server.effects.get(key as string)).toBe(1);
    const [first, second] = server.attempts;
    expect(server.attempts.map((attempt) => [attempt.key, attempt.outcome])).toEqual([
      [key, 'held'],
      [key, 'replayed'],
    ]);
    expect(second?.body.equals(first?.body ?? Buffer.alloc(0))).toBe(true);
    console.info(`resumed ${Date.now() - killedAt} ms after the SIGKILL (resume() itself took ${String(done.ms)} ms; claim TTL 10 000 ms)`);
  }, 120_000);
});

describe('SQLite journal claims held by another process', () => {
  let journal: SqliteJournal;
  beforeEach(async () => {
    journal = sqliteJournal({ path: journalPath });
    await journal.put({ scope: SCOPE, key: 'op-1', method: 'POST', url: `${SCOPE}/v1/pay`, headers: {}, body: '{}', fingerprint: 'f', submitted: true });
  });
  afterEach(() => journal.close());

  /** Writes a claim by `owner` as if another process had taken it, running for a minute. */
  const claimAs = (claimProcess: Record<string, unknown> | string, owner = 'someone-else'): void => {
    const raw = openRawDb(journalPath);
    raw
      .prepare('UPDATE oncely_operations SET claim_owner = ?, claimed_until = ?, claim_process = ? WHERE key = ?')
      .run(owner, Date.now() + 60_000, typeof claimProcess === 'string' ? claimProcess : JSON.stringify(claimProcess), 'op-1');
    raw.close();
  };
  const me = JSON.parse(thisProcess()) as { host: string; boot: string | null; pid: number; start: string | null };

  it('is refused while the holding process runs', async () => {
    claimAs(thisProcess());
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(false);
  });

  it('is void when the holding pid no longer exists', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    claimAs({ ...me, pid: Number(gone.stdout), start: '1' });
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(true);
  });

  it('is void when the pid runs but started at another time (the pid was reused)', async () => {
    expect(me.start).not.toBeNull();
    // This very process is alive, but it is not the process that took this claim.
    claimAs({ ...me, start: String(Number(me.start) + 12_345) });
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(true);
  });

  it('is void when the claim was taken in an earlier boot of this host', async () => {
    expect(me.boot).not.toBeNull();
    claimAs({ ...me, boot: '00000000-0000-0000-0000-000000000000' });
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(true);
  });

  it('holds when it was taken on another host, until it runs out', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    claimAs({ ...me, host: `not-${hostname()}`, pid: Number(gone.stdout) });
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(false);
    const raw = openRawDb(journalPath);
    raw.prepare('UPDATE oncely_operations SET claimed_until = ? WHERE key = ?').run(Date.now() - 1, 'op-1');
    raw.close();
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(true);
  });

  it('holds when the recorded process cannot be read (a claim written by an older oncely)', async () => {
    claimAs('not json');
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(false);
  });

  it('records this process with each claim it takes', async () => {
    expect(await journal.claim(SCOPE, 'op-1', 'me', 10_000)).toBe(true);
    const raw = openRawDb(journalPath, { readonly: true });
    const row = raw.prepare('SELECT claim_owner, claim_process FROM oncely_operations WHERE key = ?').get('op-1');
    raw.close();
    expect(row).toEqual({ claim_owner: 'me', claim_process: thisProcess() });
    expect(JSON.parse(thisProcess())).toMatchObject({ host: hostname(), pid: process.pid });
    if (process.platform === 'linux') expect(me.start).toBe(readFileSync(`/proc/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[19]);
  });
});

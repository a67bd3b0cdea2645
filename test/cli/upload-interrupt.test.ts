/**
 * A second Ctrl-C leaves `oncely upload` early, but never before the outcomes it has already
 * received are in the journal: an outcome left unwritten reads as pending, and the next run would
 * send that row again (a replay while the server keeps the key, a second payment once it has
 * forgotten it).
 *
 * The journal's write lock is held by another process while the uploader has answers in hand, so
 * their write-behinds cannot commit before the two Ctrl-Cs arrive; the lock is let go after.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { holdWriteLock } from '../support/sqlite-lock.js';
import { ledgerCount, startCli, startServer, type TestServer } from './helpers/processes.js';

let dir: string;
let server: TestServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-upload-interrupt-'));
  // Every payment takes 300 ms: the uploader always has requests in flight, whose answers
  // arrive while the journal is locked.
  server = await startServer(join(dir, 'server.db'), ['twice'], ['--faults', 'slow:ext1:300']);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('oncely upload and a second Ctrl-C', () => {
  it('leaves only once every answer already received is written to the journal', async () => {
    const rows = ['client_ref,operation,value_date,amount,currency,reference'];
    for (let i = 0; i < 2_000; i += 1) rows.push(`twice-${i},pay,2026-12-01,${100 + i},EUR,salary ${i}`);
    const file = join(dir, 'twice.csv');
    writeFileSync(file, `${rows.join('\n')}\n`);
    const journal = join(dir, 'twice.db');
    const ledger = (): Promise<number> => ledgerCount(server, 'tok_twice');
    const run = startCli(['upload', file, '--url', `${server.url}/v1/payments`, '--token', 'tok_twice', '--journal', journal, '--concurrency', '16']);
    while ((await ledger()) < 32) await sleep(20);

    // From here no outcome can commit: the answers to the requests in flight are held in memory.
    const lock = await holdWriteLock(journal, 4_000);
    const atLock = await ledger();
    let executed = atLock;
    for (let still = 0; still < 5;) {
      await sleep(100);
      const now = await ledger();
      still = now === executed ? still + 1 : 0;
      executed = now;
    }
    run.child.kill('SIGINT');
    await sleep(200);
    run.child.kill('SIGINT');
    const done = await run.done;
    await lock.released;
    expect(done.code, done.stderr).toBe(130);
    expect(done.stderr).toMatch(/writing the outcomes already received to the journal, then leaving/);

    // The requests answered while the journal was locked are what the test is about.
    expect(executed).toBeGreaterThan(atLock);
    const written = sqliteJournal({ path: journal });
    const succeeded = (await written.list({ state: 'succeeded' })).length;
    await written.close();
    // Every payment the server made was answered (nothing was in flight any more), so each one
    // is settled in the journal: none would be sent again.
    expect(succeeded).toBe(executed);
  }, 120_000);
});

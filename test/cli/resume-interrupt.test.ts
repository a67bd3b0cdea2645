/**
 * Ctrl-C during `oncely resume` stops sending, reports what it did and exits 130, with every
 * outcome it reported written to the journal; before, the signal killed the process with the
 * outcomes of its last answers still queued behind, to be sent again by the next run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { ledgerCount, startCli, startServer, type TestServer } from './helpers/processes.js';

let dir: string;
let server: TestServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-resume-interrupt-'));
  // 300 ms a payment: the resume always has requests in flight when Ctrl-C arrives.
  server = await startServer(join(dir, 'server.db'), ['resumer'], ['--faults', 'slow:ext1:300']);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely resume and Ctrl-C', () => {
  it('stops sending, reports and exits 130, each outcome it reported written to the journal', async () => {
    const path = join(dir, 'journal.db');
    // 60 submitted payments whose first attempt got no answer: what a crashed program leaves.
    const journal = sqliteJournal({ path });
    const crashed = createClient({
      baseUrl: server.url,
      journal,
      retry: { limit: 0 },
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    for (let i = 0; i < 60; i += 1) {
      await crashed.post('v1/payments', { json: { amount: 100 + i, currency: 'EUR', reference: `resume-${i}` } }).catch(() => undefined);
    }
    await crashed.close();
    await journal.close();

    const run = startCli(['resume', '--url', server.url, '--journal', path, '--token', 'tok_resumer', '--json']);
    while ((await ledgerCount(server, 'tok_resumer')) < 8) await new Promise((resolve) => setTimeout(resolve, 20));
    run.child.kill('SIGINT');
    const done = await run.done;
    expect(done.code, done.stderr).toBe(130);
    const lines = JSON.parse(done.stdout) as Array<{ key: string; state: string }>;
    const reported = lines.filter((line) => line.state === 'succeeded').map((line) => line.key);
    expect(reported.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(60 + 1);

    const after = sqliteJournal({ path });
    const succeeded = new Set((await after.list({ state: 'succeeded' })).map((record) => record.key));
    await after.close();
    expect(reported.filter((key) => !succeeded.has(key))).toEqual([]);
  }, 120_000);
});

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { formatAge } from '../../src/cli/journal-commands.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { ledgerCount, runCli, startServer, type TestServer } from './helpers/processes.js';

let dir: string;
let server: TestServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-journal-cmd-'));
  server = await startServer(join(dir, 'server.db'));
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Journals `count` payments the way a process killed after send() and before its first attempt leaves them. */
async function journalWithoutSending(path: string, count: number): Promise<string[]> {
  const journal = sqliteJournal({ path });
  const client = createClient({ baseUrl: server.url, journal });
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await client.prepare('POST', 'v1/payments', { json: { amount: 100 + i, currency: 'EUR', reference: `crashed-${i}` } });
    await journal.update(client.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  await client.close();
  await journal.close();
  return keys;
}

describe('oncely pending and oncely resume', () => {
  it('lists the pending operations of a journal with state, age, attempts and last status', async () => {
    const path = join(dir, 'list.db');
    const keys = await journalWithoutSending(path, 3);
    const json = await runCli(['pending', '--journal', path, '--json']);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<{ key: string; state: string; attempts: number; lastStatus: number | null; url: string }>;
    expect(rows.map((row) => [row.key, row.state, row.attempts, row.lastStatus])).toEqual(keys.map((key) => [key, 'pending', 0, null]));
    expect(rows[0]?.url).toBe(`${server.url}/v1/payments`);

    const text = await runCli(['pending', '--journal', path]);
    expect(text.stdout).toMatch(/KEY\s+STATE\s+AGE\s+ATTEMPTS\s+LAST\s+REQUEST/);
    expect(text.stdout).toContain(`${keys[0]}  pending`);
    expect(text.stdout).toMatch(/3 pending operations in/);
  });

  it('resumes every pending operation once: the ledger grows by their number and nothing stays pending', async () => {
    const path = join(dir, 'resume.db');
    const keys = await journalWithoutSending(path, 4);
    const before = await ledgerCount(server);
    const run = await runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/resumed 4: 4 settled, 0 still without a final outcome/);
    expect((await ledgerCount(server)) - before).toBe(4);
    const ledger = await server.get<{ entries: Array<{ idempotency_key: string }> }>('/v1/ledger?limit=100000');
    expect(keys.every((key) => ledger.entries.some((entry) => entry.idempotency_key === key))).toBe(true);

    const after = await runCli(['pending', '--journal', path, '--json']);
    expect(JSON.parse(after.stdout)).toEqual([]);
    const again = await runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme']);
    expect(again.stdout).toMatch(/nothing to resume/);
    expect((await ledgerCount(server)) - before).toBe(4);
  });

  it('refuses to resume without a token, so nothing is sent unauthenticated and the operations stay pending', async () => {
    const path = join(dir, 'no-token.db');
    await journalWithoutSending(path, 1);
    const run = await runCli(['resume', '--journal', path, '--url', server.url], { ONCELY_TOKEN: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--token \(or \$ONCELY_TOKEN\) is required/);
    const after = JSON.parse((await runCli(['pending', '--journal', path, '--json'])).stdout) as unknown[];
    expect(after).toHaveLength(1);
  });

  it('refuses (exit 2) a token that cannot be sent in a header, leaving the operations pending, not failed', async () => {
    const path = join(dir, 'bad-token.db');
    await journalWithoutSending(path, 2);
    const before = await ledgerCount(server);
    const run = await runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme\nx']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--token \(or \$ONCELY_TOKEN\) cannot be sent in an Authorization header/);
    const after = JSON.parse((await runCli(['pending', '--journal', path, '--json'])).stdout) as unknown[];
    expect(after).toHaveLength(2);
    expect((await ledgerCount(server)) - before).toBe(0);
  });

  it('fails (exit 1) with "no journal at PATH" on stderr for a mistyped path, pending and resume alike, creating nothing', async () => {
    const path = join(dir, 'typo', 'jornal.db');
    const runs = await Promise.all([
      runCli(['pending', '--journal', path]),
      runCli(['pending', '--journal', path, '--json']),
      runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme']),
    ]);
    for (const [run, command] of runs.map((run, i) => [run, i < 2 ? 'pending' : 'resume'] as const)) {
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(`oncely ${command}: no journal at ${path}\n`);
      expect(run.stdout).toBe('');
    }
    expect(existsSync(join(dir, 'typo'))).toBe(false);
  });

  it('reads --key-ttl as a duration, as serve does, and a bare number as hours', async () => {
    const path = join(dir, 'ttl.db');
    const [key] = await journalWithoutSending(path, 1);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const state = async (ttl: string): Promise<string | undefined> => {
      const run = await runCli(['pending', '--journal', path, '--key-ttl', ttl, '--json']);
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as Array<{ state: string }>)[0]?.state;
    };
    const states = await Promise.all(['500ms', '90s', '15m', '24h', '7d', '1'].map(state));
    expect(states).toEqual(['expired', 'pending', 'pending', 'pending', 'pending', 'pending']);
    const [fraction, zero] = await Promise.all([
      runCli(['pending', '--journal', path, '--key-ttl', '1.5']),
      runCli(['pending', '--journal', path, '--key-ttl', '0']),
    ]);
    expect(fraction.code).toBe(2);
    expect(fraction.stderr).toMatch(/--key-ttl must be a duration such as 500ms, 90s, 15m, 24h or 7d, or a whole number of hours; got "1.5"/);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(/--key-ttl must be more than 0/);

    const before = await ledgerCount(server);
    const expired = await runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme', '--key-ttl', '500ms']);
    expect(expired.code).toBe(1);
    expect(expired.stdout).toContain(`${key}  expired`);
    expect(await ledgerCount(server)).toBe(before);
    const resumed = await runCli(['resume', '--journal', path, '--url', server.url, '--token', 'test_acme', '--key-ttl', '7d']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed 1: 1 settled/);
    expect((await ledgerCount(server)) - before).toBe(1);
  }, 60_000);

  it('formats ages the way people read them', () => {
    expect([formatAge(42_000), formatAge(185_000), formatAge(7_620_000), formatAge(273_600_000)]).toEqual(['42s', '3m05s', '2h07m', '3d04h']);
  });
});

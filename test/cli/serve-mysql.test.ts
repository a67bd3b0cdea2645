/**
 * `oncely serve --mysql-url`: the reference server with its keys and app tables on MySQL /
 * MariaDB (the server of test/support/mysql.ts, a database of its own), and the flag's refusals.
 */
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../support/mysql.js';
import { runCli, startCli } from './helpers/processes.js';

const run = await canRunMysqlTests();
let backend: MysqlBackend;
beforeAll(async () => {
  if (run) backend = await openMysqlBackend('serve');
});
afterAll(async () => backend?.close());

describe('oncely serve --mysql-url', () => {
  it.runIf(run)('serves payments with the keys in MySQL: executed once, replayed, the row finished; SIGTERM exits 0', { timeout: 60_000 }, async () => {
    const url = await backend.newDatabase();
    const { child, done } = startCli(['serve', '--port', '0', '--mysql-url', url]);
    const lines: Record<string, unknown>[] = [];
    const base = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^oncely listening on (\S+)/.exec(line);
        if (match) resolve(match[1]!);
        else if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
      });
      void done.then((exit) => reject(new Error(`oncely serve exited (${exit.code}) before listening: ${exit.stderr}`)));
    });
    try {
      const post = () =>
        fetch(`${base}/v1/payments`, {
          method: 'POST',
          headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'serve-mysql-1', 'content-type': 'application/json' },
          body: JSON.stringify({ amount: 1250, currency: 'EUR', reference: "Zürich 😀 it's" }),
        });
      const first = await post();
      const body = (await first.json()) as { id: string; reference: string };
      expect({ status: first.status, reference: body.reference }).toEqual({ status: 201, reference: "Zürich 😀 it's" });
      const again = await post();
      expect({ status: again.status, replay: again.headers.get('idempotency-replay'), body: await again.json() }).toEqual({
        status: 201,
        replay: 'true',
        body,
      });
      const keys = await backend.query<{ state: string }>(url, "SELECT state FROM oncely_keys WHERE idem_key = 'serve-mysql-1'");
      const ledger = await backend.query<{ n: number }>(url, 'SELECT COUNT(*) AS n FROM ledger_entries WHERE payment_id = ?', [body.id]);
      expect({ keys, ledger: Number(ledger[0]!.n) }).toEqual({ keys: [{ state: 'finished' }], ledger: 1 });
      expect(lines.find((line) => line['event'] === 'started')).toMatchObject({ store: 'mysql', msg: expect.stringContaining('MySQL database mysql://') });
    } finally {
      child.kill('SIGTERM');
    }
    expect((await done).code).toBe(0);
  });

  it('refuses --mysql-url with --db, and a URL that is not mysql://, with exit code 2', async () => {
    const both = await runCli(['serve', '--port', '0', '--db', ':memory:', '--mysql-url', 'mysql://root@127.0.0.1/test']);
    expect({ code: both.code, stderr: both.stderr }).toMatchObject({ code: 2, stderr: expect.stringMatching(/give --db or --mysql-url, not both/) });
    const other = await runCli(['serve', '--port', '0', '--mysql-url', 'postgres://app:secret@db/payments']);
    expect({ code: other.code, stderr: other.stderr }).toMatchObject({ code: 2, stderr: expect.stringMatching(/--mysql-url takes a mysql:\/\/ URL/) });
    expect(other.stderr).not.toContain('secret');
  });
});

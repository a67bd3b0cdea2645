/**
 * `oncely conform`, run as the CLI, against `oncely serve` on SQLite and on PostgreSQL: every
 * check that applies passes. The server's rail is slowed (`--faults slow:ext2:200`) so the
 * in-flight check has a first request to overlap; the transient check does not apply (serve has
 * no fault header: its faults are process-wide).
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConformReport } from '../../src/cli/conform-report.js';
import { spawnServe, tempDir, type Served } from '../reference/serve-process.js';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';
import { PAYMENT_TEMPLATE } from './helpers/conform-run.js';
import { runCli } from './helpers/processes.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);
const withServer = await canRunServerTests();

async function conformAgainst(server: Served): Promise<{ code: number | null; report: ConformReport }> {
  const run = await runCli([
    'conform',
    `${server.url}/v1/payments`,
    '--body',
    PAYMENT_TEMPLATE,
    '--slow-body',
    PAYMENT_TEMPLATE,
    '--token',
    'test_acme',
    '--token-b',
    'test_globex',
    '--json',
  ]);
  return { code: run.code, report: JSON.parse(run.stdout) as ConformReport };
}

function expectConformant({ code, report }: { code: number | null; report: ConformReport }): void {
  expect(report.checks.filter((c) => c.verdict === 'fail').map((c) => `${c.id}: ${c.observed}`)).toEqual([]);
  expect(report.checks.filter((c) => c.verdict === 'n/a').map((c) => c.id)).toEqual(['transient']);
  expect(code).toBe(0);
  // The burst made one payment, the two callers two: every check says what it created.
  expect(report.checks.find((c) => c.id === 'concurrent')).toMatchObject({ requests: 21, created: 1 });
  expect(report.checks.find((c) => c.id === 'two-callers')).toMatchObject({ requests: 3, created: 2 });
}

describe('oncely conform against oncely serve', () => {
  it('passes every check that applies on SQLite', async () => {
    const server = await spawnServe(['--db', `${dir}/conform.db`, '--faults', 'slow:ext2:200', '--quiet']);
    try {
      expectConformant(await conformAgainst(server));
    } finally {
      await server.stop();
    }
  }, 90_000);

  it.skipIf(!withServer)(
    'passes every check that applies on PostgreSQL',
    async () => {
      const url = await requireServerUrl('conform-serve');
      const schema = `oncely_t_conform_${process.pid}`;
      const server = await spawnServe(['--db', url, '--pg-schema', schema, '--faults', 'slow:ext2:200', '--quiet']);
      try {
        expectConformant(await conformAgainst(server));
      } finally {
        await server.stop();
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      }
    },
    90_000,
  );
});

import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePgUrl } from '../support/pg.js';
import { runCli, startCli } from './helpers/processes.js';

// Throws where CI demands a server (ONCELY_PG_URL that does not answer, or ONCELY_REQUIRE_PG=1
// with none): the PostgreSQL test below is skipped only on a machine without one, and says so.
const pgUrl = await resolvePgUrl();
if (!pgUrl) console.warn('[pg harness] SKIPPING the serve startup line on PostgreSQL: it needs a PostgreSQL server');
async function pgQuery<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

// realpath: the server resolves against its working directory as the OS reports it.
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'oncely-serve-startup-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  readonly event: string;
  readonly db: string;
  readonly ttlMs: number;
  readonly msg: string;
}

/** Runs `oncely serve --port 0 --quiet …args` in `cwd` until its `started` line, then stops it with SIGTERM. */
async function startedLine(cwd: string, args: readonly string[]): Promise<{ started: Started; code: number | null }> {
  const { child, done } = startCli(['serve', '--port', '0', '--quiet', ...args], {}, cwd);
  const started = await new Promise<Started>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const entry = JSON.parse(line) as Partial<Started>;
      if (entry.event === 'started') resolve(entry as Started);
    });
    void done.then((run) => reject(new Error(`oncely serve exited (${run.code}) before starting: ${run.stderr}`)));
  });
  child.kill('SIGTERM');
  return { started, code: (await done).code };
}

describe('oncely serve startup', () => {
  it('says where its default database is, by absolute path, and puts it there', async () => {
    const { started, code } = await startedLine(dir, []);
    const path = join(dir, 'oncely-server.db');
    expect(started.db).toBe(path);
    expect(started.msg).toContain(`SQLite database ${path}; demo callers`);
    expect(existsSync(path)).toBe(true);
    expect(code).toBe(0);
  });

  it('makes a relative --db absolute and takes --key-ttl in the duration syntax pending and resume share', async () => {
    const { started, code } = await startedLine(dir, ['--db', 'relative.db', '--key-ttl', '7d']);
    expect(started.db).toBe(join(dir, 'relative.db'));
    expect(started.ttlMs).toBe(7 * 86_400_000);
    expect(code).toBe(0);
  });

  it.skipIf(!pgUrl)("names the PostgreSQL schema it uses: the URL's search_path when --pg-schema is absent", async () => {
    const schema = `oncely_t_startup_${process.pid}`;
    const url = `${pgUrl}${pgUrl!.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    try {
      const { started, code } = await startedLine(dir, ['--db', url]);
      expect(started.msg).toContain(`, schema ${schema};`);
      const tables = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'oncely_keys'`, [schema]);
      expect(tables[0]!.n).toBe(1);
      expect(code).toBe(0);
    } finally {
      await pgQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it('refuses a bare number for --key-ttl (hours only on pending and resume, for their old syntax) and exits 2', async () => {
    const run = await runCli(['serve', '--port', '0', '--db', join(dir, 'never.db'), '--key-ttl', '24']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^oncely serve: --key-ttl must be a duration such as 500ms, 90s, 15m, 24h or 7d; got "24"$/m);
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
  });

  it('refuses a --key-ttl not longer than the lease (the default lease is 30s) and exits 2', async () => {
    const run = await runCli(['serve', '--port', '0', '--db', join(dir, 'never.db'), '--key-ttl', '30s']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--key-ttl must be longer than the lease/);
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
  });
});

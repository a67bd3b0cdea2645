/**
 * The SQL's own bound, measured inside a suite's rounds: PostgreSQL's `pgbench` (a C client, no
 * Node in the way) running one of `bench/pgbench/*.sql` — the statements a store sends, pipelined
 * as it sends them, or the unguarded app's one INSERT — alternated with the HTTP loads, so a
 * figure can divide oncely's ratio to the unguarded app by the ratio the SQL alone allows.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { ROOT } from './proc.js';
import type { LoadResult } from './load.js';

const run = promisify(execFile);

/**
 * The `pgbench` binary: on `PATH`, else Debian's `/usr/lib/postgresql/<version>/bin/pgbench`;
 * `undefined` when there is none.
 *
 * @example
 * ```ts
 * const binary = await findPgbench(); // '/usr/lib/postgresql/15/bin/pgbench'
 * ```
 */
export async function findPgbench(): Promise<string | undefined> {
  try {
    await run('pgbench', ['--version']);
    return 'pgbench';
  } catch {
    const root = '/usr/lib/postgresql';
    if (!existsSync(root)) return undefined;
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
    return versions.map((version) => join(root, version, 'bin/pgbench')).find((path) => existsSync(path));
  }
}

/**
 * The SQL bound's tables (`bench/pgbench/setup.sql`), created afresh in the database at `url`,
 * with the key table and its functions as the store itself migrates them (what
 * `first-execution-store.sql` calls); resolves to their removal.
 *
 * @example
 * ```ts
 * const drop = await setUpPgbench('postgres://postgres@127.0.0.1:5432/test');
 * ```
 */
export async function setUpPgbench(url: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(readFileSync(join(ROOT, 'bench/pgbench/setup.sql'), 'utf8'));
    await client.query('DROP TABLE oncely_pgbench.oncely_keys');
  } finally {
    await client.end();
  }
  const store = postgresKeyStore({ connectionString: url, schema: 'oncely_pgbench' });
  await store.migrate().finally(() => store.close());
  return async () => {
    const dropper = new pg.Client({ connectionString: url });
    await dropper.connect();
    await dropper.query('DROP SCHEMA IF EXISTS oncely_pgbench CASCADE').finally(() => dropper.end());
  };
}

/**
 * One `pgbench` run of `bench/pgbench/<script>.sql` (prepared statements, `connections` clients, 2
 * threads) for `seconds`, as a load result: `rps` is its transactions per second.
 *
 * @example
 * ```ts
 * const insert = await pgbenchLoad(binary, url, 'insert', 10, 2);
 * ```
 */
export async function pgbenchLoad(binary: string, url: string, script: string, connections: number, seconds: number): Promise<LoadResult> {
  const file = join(ROOT, `bench/pgbench/${script}.sql`);
  const args = ['-n', '-M', 'prepared', '-c', String(connections), '-j', '2', '-T', String(seconds), '-f', file, url];
  const { stdout } = await run(binary, args, { maxBuffer: 1 << 20 });
  const tps = Number(/^tps = ([\d.]+)/m.exec(stdout)?.[1]);
  const latency = Number(/^latency average = ([\d.]+) ms/m.exec(stdout)?.[1]);
  const transactions = Number(/^number of transactions actually processed: (\d+)/m.exec(stdout)?.[1]);
  const failed = Number(/^number of failed transactions: (\d+)/m.exec(stdout)?.[1] ?? 0);
  if (!Number.isFinite(tps)) throw new Error(`pgbench ${script}: no tps in its output:\n${stdout.slice(-1000)}`);
  return { rps: tps, p50: latency, p99: latency, requests: transactions, errors: failed, non2xx: 0, statuses: {} };
}

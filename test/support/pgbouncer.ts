/**
 * PgBouncer in front of the test PostgreSQL server (issue 40): Debian's `pgbouncer` binary, started
 * on a free loopback port in `transaction` or `session` pool mode with `auth_type = trust` and
 * `ignore_startup_parameters = extra_float_digits,options` (so a startup `options` setting is
 * silently dropped, as operators commonly configure it), pointing at the server `resolvePgUrl`
 * gives. It runs as user `postgres` when the tests run as root (PgBouncer refuses root).
 *
 * With `ONCELY_REQUIRE_PG=1` (CI) a missing binary is an error, never a skip: `.ci/run` installs it.
 *
 * @module
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { resolvePgUrl } from './pg.js';

/** Where Debian installs it. */
export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

/** PgBouncer's pool modes the tests run. */
export type PoolMode = 'transaction' | 'session';

/** A running PgBouncer. */
export interface Bouncer {
  /** A URL through PgBouncer to the same database as `direct`. */
  readonly url: string;
  /** The server's own URL (for a LISTEN connection that is really a session, and for inspection). */
  readonly direct: string;
  readonly mode: PoolMode;
  /** Its log so far (for a failing test's message). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Whether PgBouncer tests can run here. Under `ONCELY_REQUIRE_PG=1` always "yes", so a missing
 * binary or server fails the test instead of skipping it.
 */
export async function canRunPgBouncerTests(): Promise<boolean> {
  if (process.env.ONCELY_REQUIRE_PG === '1') return true;
  if (!existsSync(PGBOUNCER_BIN)) {
    console.warn(`[pgbouncer harness] SKIPPING: no ${PGBOUNCER_BIN} (apt-get install pgbouncer)`);
    return false;
  }
  if ((await resolvePgUrl()) === undefined) {
    console.warn('[pgbouncer harness] SKIPPING: no PostgreSQL server reachable');
    return false;
  }
  return true;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Live bouncers, killed when the process exits (a test that timed out leaves none behind). */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of live) proc.kill('SIGKILL');
});

/**
 * Starts PgBouncer in `mode` in front of the test server. Throws (naming the install command)
 * when the binary is missing, and with PgBouncer's log when it does not answer within 10 s.
 */
export async function startPgBouncer(mode: PoolMode, settings: Readonly<Record<string, string>> = {}): Promise<Bouncer> {
  if (!existsSync(PGBOUNCER_BIN)) throw new Error(`no ${PGBOUNCER_BIN}: install Debian's PgBouncer (apt-get install -y pgbouncer)`);
  const direct = await resolvePgUrl();
  if (direct === undefined) throw new Error('PgBouncer tests need a PostgreSQL server (ONCELY_PG_URL or 127.0.0.1:5432)');
  const upstream = new URL(direct);
  const database = upstream.pathname.slice(1) || 'postgres';
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'oncely-pgbouncer-'));
  const config: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'users.txt'),
    pool_mode: mode,
    ignore_startup_parameters: 'extra_float_digits,options',
    max_client_conn: '400',
    default_pool_size: '40',
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    ...settings,
  };
  const host = upstream.hostname || '127.0.0.1';
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    `[databases]\n${database} = host=${host} port=${upstream.port || '5432'} dbname=${database}\n\n[pgbouncer]\n` +
      Object.entries(config)
        .map(([name, value]) => `${name} = ${value}`)
        .join('\n') +
      '\n',
  );
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync('chown', ['-R', 'postgres', dir]);
  else chmodSync(dir, 0o755);
  const proc = spawn(PGBOUNCER_BIN, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(proc);
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  void exited.then(() => live.delete(proc));
  const log = (): string => {
    try {
      return `${stderr}${readFileSync(config.logfile!, 'utf8')}`;
    } catch {
      return stderr;
    }
  };
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`;
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let tries = 0; ; tries += 1) {
    if (await answers(url)) break;
    if (proc.exitCode !== null || tries >= 50) {
      const output = log();
      await stop();
      throw new Error(`PgBouncer (${mode} mode) did not answer on 127.0.0.1:${port}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.info(`[pgbouncer harness] PgBouncer ${mode} mode on 127.0.0.1:${port} → ${host}:${upstream.port || '5432'}/${database}`);
  return { url, direct, mode, log, stop };
}

/**
 * The PostgreSQL test harness. Which engine a test file gets:
 *
 * 1. `ONCELY_PG_URL` when set (CI sets it), and it must answer;
 * 2. else `postgres://postgres@127.0.0.1:5432/test` if it answers within a second;
 * 3. else PGlite in-process (started once per test file, ~4 s), so the dialect is always tested.
 *
 * With `ONCELY_REQUIRE_PG=1` (CI) a missing server throws: the suite fails, never falls back.
 * Every store gets a fresh schema, dropped by `close()`, so parallel files and runs never collide.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresKeyStore, type PostgresKeyStoreOptions } from '../../src/server/store/postgres.node.js';
import type { PgliteLike } from '../../src/server/store/postgres-pglite.node.js';
import type { KeyStore } from '../../src/server/store/types.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** Store options a test may set (the engine and schema come from the harness). */
export type StoreOverrides = Omit<PostgresKeyStoreOptions, 'connectionString' | 'pool' | 'pglite' | 'schema'>;

/** One engine for one test file. */
export interface PgBackend {
  readonly kind: 'postgres' | 'pglite';
  /** The server URL (`postgres` only). */
  readonly url: string | undefined;
  /** A fresh schema name, dropped by `close()`. */
  newSchema(): string;
  /** A store in a fresh schema (migrated), closed and dropped by `close()`. */
  store(overrides?: StoreOverrides): Promise<KeyStore & { readonly schema: string }>;
  /** A store in `schema`, not migrated (several may share one schema), closed by `close()`. */
  open(schema: string, overrides?: StoreOverrides): KeyStore;
  /** Runs SQL as a test would inspect the database (outside any store). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

async function reachable(url: string, timeoutMs: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
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

/** The server URL a test file should use, or `undefined` for PGlite; throws where CI demands a server. */
export async function resolvePgUrl(): Promise<string | undefined> {
  const required = process.env.ONCELY_REQUIRE_PG === '1';
  const configured = process.env.ONCELY_PG_URL;
  if (configured) {
    if (await reachable(configured, 5000)) return configured;
    throw new Error(`ONCELY_PG_URL=${configured} does not answer`);
  }
  if (await reachable(DEFAULT_PG_URL, 1000)) return DEFAULT_PG_URL;
  if (required) throw new Error(`ONCELY_REQUIRE_PG=1 but no PostgreSQL answers at ${DEFAULT_PG_URL}`);
  return undefined;
}

const slug = (label: string): string =>
  label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 30);

/** A real server when one is available (see the module comment), else PGlite. */
export async function openPgBackend(label: string): Promise<PgBackend> {
  const url = await resolvePgUrl();
  return url ? openServer(url, label) : openPglite(label);
}

function schemaNamer(label: string): () => string {
  let n = 0;
  const run = randomBytes(3).toString('hex');
  return () => `oncely_t_${slug(label)}_${run}_${(n += 1)}`;
}

async function openServer(url: string, label: string): Promise<PgBackend> {
  console.info(`[pg harness] ${label}: PostgreSQL at ${url}`);
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on('error', () => undefined);
  const schemas: string[] = [];
  const stores: KeyStore[] = [];
  const nextSchema = schemaNamer(label);
  const newSchema = (): string => {
    const schema = nextSchema();
    schemas.push(schema);
    return schema;
  };
  const open = (schema: string, overrides: StoreOverrides = {}): KeyStore => {
    const store = postgresKeyStore({ connectionString: url, schema, ...overrides });
    stores.push(store);
    return store;
  };
  return {
    kind: 'postgres',
    url,
    newSchema,
    open,
    async store(overrides = {}) {
      const schema = newSchema();
      const store = open(schema, overrides);
      await store.migrate?.();
      return Object.assign(store, { schema });
    },
    query: async <T>(sql: string, params?: unknown[]) => (await admin.query(sql, params)).rows as T[],
    async close() {
      await Promise.all(stores.map((store) => store.close?.().catch(() => undefined)));
      for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    },
  };
}

/** PGlite in-process, whatever servers exist (the second engine the contract runs on). */
export async function openPglite(label: string): Promise<PgBackend> {
  console.info(`[pg harness] ${label}: PGlite in-process`);
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create();
  const pglite: PgliteLike = db;
  const stores: KeyStore[] = [];
  const newSchema = schemaNamer(label);
  const open = (schema: string, overrides: StoreOverrides = {}): KeyStore => {
    const store = postgresKeyStore({ pglite, schema, ...overrides });
    stores.push(store);
    return store;
  };
  return {
    kind: 'pglite',
    url: undefined,
    newSchema,
    open,
    async store(overrides = {}) {
      const schema = newSchema();
      const store = open(schema, overrides);
      await store.migrate?.();
      return Object.assign(store, { schema });
    },
    query: async <T>(sql: string, params?: unknown[]) => (await db.query<T>(sql, params)).rows,
    async close() {
      await Promise.all(stores.map((store) => store.close?.()));
      await db.close();
    },
  };
}

/** A private PostgreSQL cluster a test may stop and start (the shared server is never touched). */
export interface ThrowawayCluster {
  readonly url: string;
  readonly port: number;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: connections die at once, as in a crash or a network cut. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

/** The newest installed PostgreSQL's bin directory with `initdb`, or `undefined`. */
export function findPgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(a) - Number(b));
  return versions
    .map((v) => join(root, v, 'bin'))
    .filter((bin) => existsSync(join(bin, 'initdb')))
    .at(-1);
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

/**
 * `initdb` a cluster in a temporary directory on a spare port (as user `postgres` when running as
 * root: PostgreSQL refuses to run as root), and start it. Throws when `initdb` is not installed.
 */
export async function startThrowawayCluster(): Promise<ThrowawayCluster> {
  const bin = findPgBin();
  if (!bin) throw new Error('no initdb under /usr/lib/postgresql/*/bin: cannot create a throwaway PostgreSQL cluster');
  const dir = mkdtempSync(join(tmpdir(), 'oncely-pg-'));
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const sh = (command: string): void => {
    execFileSync(asRoot ? 'su' : 'sh', asRoot ? ['postgres', '-c', command] : ['-c', command], { stdio: 'pipe', timeout: 60_000 });
  };
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  sh(`${bin}/initdb -D ${dir}/data -U postgres --auth=trust --no-sync >/dev/null`);
  // fsync=off is safe here: only the server process dies in these tests, never the OS. Commits stay
  // synchronous, since an immediate stop would otherwise lose the last ones (a false "lost" result).
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async (): Promise<void> => sh(`${bin}/pg_ctl -D ${dir}/data -o "${options}" -l ${dir}/log -w -t 30 start >/dev/null`);
  const stopNow = (): void => sh(`${bin}/pg_ctl -D ${dir}/data -m immediate -w stop >/dev/null`);
  const stop = async (): Promise<void> => stopNow();
  // Synchronous, so it can also run from a process 'exit' handler.
  const destroyNow = (): void => {
    try {
      stopNow();
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', destroyNow);
  await start();
  console.info(`[pg harness] throwaway cluster on 127.0.0.1:${port} (${dir})`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    async destroy() {
      destroyNow();
    },
  };
}

/**
 * A real server for tests that run `oncely serve` processes (PGlite lives in one process): the
 * configured or local server, else a throwaway cluster. Throws when neither exists; callers that
 * may run without one check {@link canRunServerTests} first.
 */
export async function requireServerUrl(label: string): Promise<string> {
  const url = await resolvePgUrl();
  if (url) {
    console.info(`[pg harness] ${label}: PostgreSQL at ${url}`);
    return url;
  }
  // Destroyed when the test process exits.
  return (await startThrowawayCluster()).url;
}

/**
 * Whether tests that start a private PostgreSQL of their own (a primary configured for them: see
 * `sync-standby.ts`) can run here: yes with `initdb`. Under `ONCELY_REQUIRE_PG=1` always "yes",
 * so missing binaries fail the test instead of skipping it.
 */
export function canRunPrivateClusterTests(): boolean {
  if (process.env.ONCELY_REQUIRE_PG === '1' || findPgBin() !== undefined) return true;
  console.warn("[pg harness] SKIPPING the private-cluster tests: PostgreSQL's initdb is not installed");
  return false;
}

/**
 * Whether server tests can run here: yes with a server or `initdb`. Under `ONCELY_REQUIRE_PG=1`
 * always "yes", so a missing server fails the test instead of skipping it.
 */
export async function canRunServerTests(): Promise<boolean> {
  if (process.env.ONCELY_REQUIRE_PG === '1' || findPgBin() !== undefined) return true;
  if ((await resolvePgUrl()) !== undefined) return true;
  console.warn('[pg harness] SKIPPING PostgreSQL server tests: no server reachable and no initdb installed');
  return false;
}

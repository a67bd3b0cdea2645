/**
 * The MySQL / MariaDB test harness. The server a test file gets: `ONCELY_MYSQL_URL` when set (CI
 * sets it), and it must answer; else `mysql://root@127.0.0.1:3306/test` if it answers within a
 * second. With `ONCELY_REQUIRE_MYSQL=1` (CI) a missing server throws: the suite fails, and its
 * gate ({@link canRunMysqlTests}) never says "skip".
 *
 * Every backend works in databases of its own (`oncely_t_<label>_<random>_<n>`), dropped by
 * `close()`, so parallel files and runs never collide.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { mysqlKeyStore, type MysqlKeyStoreOptions } from '../../src/server/mysql.js';
import type { KeyStore } from '../../src/server/store.js';

export const DEFAULT_MYSQL_URL = 'mysql://root@127.0.0.1:3306/test';

async function reachable(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ uri: url, connectTimeout: timeoutMs });
    await conn.query('SELECT 1');
    await conn.end();
    return true;
  } catch {
    return false;
  }
}

/** The server URL a test file should use, or `undefined` when none answers; throws where CI demands one. */
export async function resolveMysqlUrl(): Promise<string | undefined> {
  const configured = process.env.ONCELY_MYSQL_URL;
  if (configured) {
    if (await reachable(configured, 5000)) return configured;
    throw new Error(`ONCELY_MYSQL_URL=${configured} does not answer`);
  }
  if (await reachable(DEFAULT_MYSQL_URL, 1000)) return DEFAULT_MYSQL_URL;
  if (process.env.ONCELY_REQUIRE_MYSQL === '1') throw new Error(`ONCELY_REQUIRE_MYSQL=1 but no MySQL answers at ${DEFAULT_MYSQL_URL}`);
  return undefined;
}

/**
 * Whether the MySQL suites run: always under `ONCELY_REQUIRE_MYSQL=1` (a missing server then
 * fails them), else when a server answers.
 */
export async function canRunMysqlTests(): Promise<boolean> {
  if (process.env.ONCELY_REQUIRE_MYSQL === '1') return true;
  if ((await resolveMysqlUrl()) !== undefined) return true;
  console.warn(`[mysql harness] SKIPPING the MySQL suites: no server answers at ${DEFAULT_MYSQL_URL} (set ONCELY_MYSQL_URL)`);
  return false;
}

/** `url` with its path (the database) replaced. */
export const urlWithDatabase = (url: string, database: string): string => {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
};

/** One server for one test file. */
export interface MysqlBackend {
  readonly url: string;
  /** A fresh database (created now, dropped by `close()`); answers its URL. */
  newDatabase(): Promise<string>;
  /** A store on `url` (a database's), closed by `close()`. */
  open(url: string, overrides?: Omit<MysqlKeyStoreOptions, 'uri' | 'pool'>): KeyStore;
  /** Runs SQL outside any store, as a test inspects the database. */
  query<T = Record<string, unknown>>(url: string, sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** A backend on the server {@link resolveMysqlUrl} finds; throws when there is none. */
export async function openMysqlBackend(label: string): Promise<MysqlBackend> {
  const url = await resolveMysqlUrl();
  if (!url) throw new Error('no MySQL server answers (gate the suite on canRunMysqlTests)');
  const admin = mysql.createPool({ uri: url, connectionLimit: 2 });
  const run = randomBytes(3).toString('hex');
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 20);
  const databases: string[] = [];
  const stores: KeyStore[] = [];
  const pools = new Map<string, mysql.Pool>();
  return {
    url,
    async newDatabase() {
      const name = `oncely_t_${slug}_${run}_${databases.length + 1}`;
      databases.push(name);
      await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
      return urlWithDatabase(url, name);
    },
    open(at, overrides = {}) {
      const store = mysqlKeyStore({ uri: at, ...overrides });
      stores.push(store);
      return store;
    },
    async query<T>(at: string, sql: string, params: unknown[] = []) {
      let pool = pools.get(at);
      if (!pool) pools.set(at, (pool = mysql.createPool({ uri: at, connectionLimit: 2 })));
      return (await pool.query(sql, params))[0] as T[];
    },
    async close() {
      await Promise.all(stores.map((store) => store.close?.().catch(() => undefined)));
      await Promise.all([...pools.values()].map((pool) => pool.end()));
      for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    },
  };
}

/**
 * A Nest server SIGKILLed inside an `@Idempotent({ transaction: true })` handler, after its INSERT
 * through `@OncelyTx()` and before its answer, on each platform, on SQLite and on real PostgreSQL:
 * the INSERT and the key never committed, so the first retry (to a server that never saw the
 * request) runs the handler at once, and there is exactly one order, the retry's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { openRawDb } from '../support/sqlite-db.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';
import { PLATFORMS } from './app.js';

const APP = fileURLToPath(new URL('./fixtures/crash-app.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-nest-crash-'));
const live = new Set<ChildProcess>();
const schemas: string[] = [];
let pgUrl: string | undefined;
let admin: pg.Pool | undefined;
const withPostgres = await canRunServerTests();

beforeAll(async () => {
  if (!withPostgres) return;
  pgUrl = await requireServerUrl('nest crash');
  admin = new pg.Pool({ connectionString: pgUrl, max: 2 });
});

afterAll(async () => {
  for (const proc of live) proc.kill('SIGKILL');
  for (const schema of schemas) await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.end();
  rmSync(dir, { recursive: true, force: true });
});

interface App {
  readonly url: string;
  readonly pid: number;
  readonly executed: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(platform: string, env: Record<string, string>): Promise<App> {
  const proc = spawn(process.execPath, ['--import', 'tsx', APP, platform], {
    cwd: ROOT,
    // Nest's decorators: tsx reads the tsconfig that turns experimentalDecorators on.
    env: { ...process.env, ...env, TSX_TSCONFIG_PATH: join(ROOT, 'test/nestjs/tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  const stderr: string[] = [];
  createInterface({ input: proc.stderr! }).on('line', (line) => stderr.push(line));
  const lines = createInterface({ input: proc.stdout! });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    let status: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let closed = false;
    const done = () => status && closed && resolve(status);
    proc.once('exit', (code, signal) => {
      live.delete(proc);
      status = { code, signal };
      done();
    });
    lines.once('close', () => {
      closed = true;
      done();
    });
  });
  const executed: string[] = [];
  return new Promise<App>((resolve, reject) => {
    lines.on('line', (line) => {
      const listening = /^listening on (\S+)$/.exec(line);
      if (listening) resolve({ url: listening[1]!, pid: proc.pid!, executed, exited });
      else if (line.startsWith('executed ')) executed.push(line.slice('executed '.length));
    });
    void exited.then(({ code, signal }) => reject(new Error(`crash-app exited (${signal ?? code}) before listening: ${stderr.join('\n')}`)));
  });
}

const post = (url: string, key: string): Promise<Response> =>
  fetch(`${url}/tx/orders`, { method: 'POST', headers: { 'idempotency-key': key, 'content-type': 'application/json' }, body: '{"item":"espresso"}' });

interface Backend {
  env(name: string): Record<string, string>;
  /** The pids of the processes that inserted an order for `key`, sorted. */
  orders(env: Record<string, string>, key: string): Promise<number[]>;
}

const sqlite: Backend = {
  env: (name) => ({ ONCELY_APP_DB: join(dir, `${name}.db`) }),
  async orders(env, key) {
    const db = openRawDb(env['ONCELY_APP_DB']!, { readonly: true });
    try {
      return (db.prepare('SELECT pid FROM orders WHERE key = ?').all(key) as Array<{ pid: number }>).map((row) => row.pid).sort();
    } finally {
      db.close();
    }
  },
};

const postgres: Backend = {
  env() {
    const schema = `oncely_t_nest_crash_${randomBytes(4).toString('hex')}`;
    schemas.push(schema);
    return { ONCELY_APP_DB: pgUrl!, ONCELY_APP_SCHEMA: schema };
  },
  async orders(env, key) {
    const { rows } = await admin!.query<{ pid: number }>(`SELECT pid FROM ${env['ONCELY_APP_SCHEMA']}.orders WHERE key = $1`, [key]);
    return rows.map((row) => row.pid).sort();
  },
};

const TITLE = 'platform-%s: the half-done INSERT and its key never committed; the first retry runs the handler, one order';

describe.concurrent('a Nest server SIGKILLed inside a transaction: true handler, on SQLite', () => {
  it.for(PLATFORMS)(TITLE, { timeout: 120_000 }, (platform) => crashAndRetry(platform, 'sqlite', sqlite));
});

describe.skipIf(!withPostgres)('a Nest server SIGKILLed inside a transaction: true handler, on PostgreSQL', { concurrent: true }, () => {
  it.for(PLATFORMS)(TITLE, { timeout: 120_000 }, (platform) => crashAndRetry(platform, 'postgres', postgres));
});

async function crashAndRetry(platform: string, store: string, backend: Backend): Promise<void> {
  const env = backend.env(`${platform}-${store}`);
  const key = `order-${platform}-${store}`;
  const [doomed, replacement] = await Promise.all([start(platform, { ...env, ONCELY_APP_KILL: '1' }), start(platform, env)]);
  // The connection dies with the server: no answer at all.
  await expect(post(doomed.url, key)).rejects.toThrow();
  expect(await doomed.exited).toEqual({ code: null, signal: 'SIGKILL' });
  expect(doomed.executed).toEqual([key]);

  const retry = await post(replacement.url, key);
  const text = await retry.text();
  expect({ status: retry.status, replay: retry.headers.get('idempotency-replay'), body: JSON.parse(text) as unknown }).toEqual({
    status: 201,
    replay: null,
    body: { key, item: 'espresso', pid: replacement.pid },
  });
  const replay = await post(replacement.url, key);
  expect({ status: replay.status, replay: replay.headers.get('idempotency-replay'), body: await replay.text() }).toEqual({
    status: 201,
    replay: 'true',
    body: text,
  });
  process.kill(replacement.pid, 'SIGTERM');
  await replacement.exited;
  expect(replacement.executed).toEqual([key]);
  expect(await backend.orders(env, key)).toEqual([replacement.pid]);
}

/**
 * `oncely/web` on Bun and on Deno, each from its npm package (`bun`, `deno`: the runtime's binary
 * in a platform package), serving a wrapped handler with its own server (`Bun.serve`,
 * `Deno.serve`, `fixtures/runtime-app.ts`) over real PostgreSQL with `transaction: true`:
 * duplicates run the handler once, another body is `422`, one order row.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const APP = fileURLToPath(new URL('./fixtures/runtime-app.ts', import.meta.url));
/** Each runtime's command line, its binary from this repository's node_modules. */
const RUNTIMES = {
  bun: ['node_modules/.bin/bun', 'run', APP],
  // Sloppy imports: the sources import each other as `.js`, as tsc wants; Deno maps them to `.ts`.
  deno: ['node_modules/.bin/deno', 'run', '--allow-all', '--sloppy-imports', APP],
};

const withPostgres = await canRunServerTests();
const live = new Set<ChildProcess>();
const schemas: string[] = [];
let url = '';
let admin: pg.Pool | undefined;

beforeAll(async () => {
  if (!withPostgres) return;
  url = await requireServerUrl('web runtimes');
  admin = new pg.Pool({ connectionString: url, max: 2 });
});

afterAll(async () => {
  for (const child of live) child.kill('SIGKILL');
  for (const schema of schemas) await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.end();
});

/** Starts the app under `runtime` and resolves to its origin once it listens. */
function start(runtime: keyof typeof RUNTIMES, schema: string): Promise<string> {
  const [command, ...args] = RUNTIMES[runtime];
  const env = { ...process.env, ONCELY_APP_DB: url, ONCELY_APP_SCHEMA: schema, DENO_NO_UPDATE_CHECK: '1', BUN_DISABLE_TELEMETRY: '1' };
  const child = spawn(command!, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${runtime} exited with ${String(code)} before listening:\n${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const listening = /^listening on (\S+)$/.exec(line);
      if (listening) resolve(listening[1]!);
    });
  });
}

const post = (origin: string, key: string, item: string): Promise<Response> =>
  fetch(`${origin}/orders`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ item }) });

describe.skipIf(!withPostgres).each(Object.keys(RUNTIMES) as Array<keyof typeof RUNTIMES>)('oncely/web served by %s', (runtime) => {
  it('runs 50 identical concurrent requests once, answers another body 422, and commits one order', { timeout: 120_000 }, async () => {
    const schema = `oncely_t_web_${runtime}_${randomBytes(4).toString('hex')}`;
    schemas.push(schema);
    const origin = await start(runtime, schema);

    const answers = await Promise.all(Array.from({ length: 50 }, () => post(origin, 'k-50', 'espresso')));
    const texts = await Promise.all(answers.map(async (answer) => `${answer.status} ${await answer.text()}`));
    expect(new Set(texts)).toEqual(new Set([`201 {"key":"k-50","item":"espresso","runtime":"${runtime}"}`]));
    expect(answers.filter((answer) => answer.headers.get('idempotency-replay') === 'true')).toHaveLength(49);
    expect((await post(origin, 'k-50', 'lamp')).status).toBe(422);

    expect(await (await fetch(`${origin}/runs`)).json()).toEqual({ runs: 1 });
    const { rows } = await admin!.query<{ runtime: string }>(`SELECT runtime FROM ${schema}.orders WHERE key = 'k-50'`);
    expect(rows).toEqual([{ runtime }]);
  });
});

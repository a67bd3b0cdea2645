/**
 * Facts the README and the guides state are checked against the package: what `npm install
 * oncely` pulls in, and what an example does when it is copied as written and run.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Express } from 'express';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { requireServerUrl } from '../support/pg.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');

interface LockEntry {
  readonly dependencies?: Readonly<Record<string, string>>;
}

/** Every package installing oncely brings along: its dependencies and theirs, from the lockfile. */
function installedWithOncely(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const seen = new Set<string>();
  const visit = (name: string, from: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const path = lock.packages[`${from}node_modules/${name}`] === undefined ? `node_modules/${name}` : `${from}node_modules/${name}`;
    for (const dependency of Object.keys(lock.packages[path]?.dependencies ?? {})) visit(dependency, `${path}/`);
  };
  for (const name of Object.keys(manifest.dependencies)) visit(name, '');
  return [...seen].sort();
}

const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

describe('the README', () => {
  it('counts and names every package `npm install oncely` pulls', () => {
    const claim = /`npm install oncely` pulls (\w+) small packages: ([^)]*)\)/.exec(readme);
    expect(claim, 'the sentence saying what `npm install oncely` pulls').not.toBeNull();
    const [, count = '', list = ''] = claim ?? [];
    const installed = installedWithOncely();
    expect(
      list
        .split(',')
        .map((name) => name.trim())
        .sort(),
    ).toEqual(installed);
    expect(NUMBERS.indexOf(count)).toBe(installed.length);
  });
});

describe("the middleware guide's example of a handler writing in the key's transaction", () => {
  /** The snippet as written, its `oncely/…` imports pointed at this repository's sources. */
  const snippet = (): string => {
    const code = [...readFileSync(join(ROOT, 'docs/middleware.md'), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```/gm)]
      .map((match) => match[1] as string)
      .find((text) => text.includes('transaction: true') && text.includes('INSERT INTO orders'));
    expect(code, 'the docs/middleware.md snippet with transaction: true').toBeDefined();
    return (code as string)
      .replace("from 'oncely/express'", `from '${join(ROOT, 'src/server/middleware/express.ts')}'`)
      .replace("from 'oncely/server/postgres'", `from '${join(ROOT, 'src/server/postgres.ts')}'`);
  };

  it('takes the same key from two callers as two orders, each replayed to its own caller, when copied as written', async () => {
    const url = await requireServerUrl('readme transaction');
    const schema = `oncely_t_readme_${randomBytes(3).toString('hex')}`;
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    // Inside node_modules: express and pg resolve from there, as in an app.
    const dir = join(ROOT, 'node_modules/.oncely-readme-run');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `orders-${schema}.ts`);
    writeFileSync(file, `${snippet()}\nexport { app, pool };\n`);
    const previous = process.env['DATABASE_URL'];
    process.env['DATABASE_URL'] = `${url}?options=${encodeURIComponent(`-csearch_path=${schema}`)}`;
    let server: Server | undefined;
    let pool: pg.Pool | undefined;
    try {
      const module = (await import(file)) as { app: Express; pool: pg.Pool };
      pool = module.pool;
      server = module.app.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      const order = async (account: string): Promise<{ status: number; body: string }> => {
        const response = await fetch(`http://127.0.0.1:${port}/v1/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'order-1', 'x-account-id': account },
          body: JSON.stringify({ item: 'book' }),
          signal: AbortSignal.timeout(10_000),
        });
        return { status: response.status, body: await response.text() };
      };
      const first = await order('acme');
      const other = await order('globex'); // the same key from another caller: another order
      const again = await order('acme'); // the first caller's retry: its own order, replayed
      expect([first.status, other.status, again.status], other.body.slice(0, 200)).toEqual([201, 201, 201]);
      expect(again.body).toBe(first.body);
      expect(other.body).not.toBe(first.body);
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.orders`)).rows[0]).toEqual({ n: 2 });
    } finally {
      server?.closeAllConnections();
      server?.close();
      await pool?.end();
      if (previous === undefined) delete process.env['DATABASE_URL'];
      else process.env['DATABASE_URL'] = previous;
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

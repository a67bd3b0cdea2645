/**
 * oncely as people install it: `npm pack`, the tarball installed into fresh projects outside the
 * repository — Node ESM TypeScript (`nodenext`, `skipLibCheck: false`), CommonJS TypeScript, a
 * Vite browser build — each typechecked and run against `oncely serve` from the installed
 * package's own bin. What typechecks there is what runs there.
 *
 * The drivers are optional peers: the Node project installs better-sqlite3 (linked from this
 * repository's node_modules with install scripts off, so its binary is used as built and never
 * rebuilt in place), the browser project installs none.
 * Vite comes from the npm registry. Run with `npm run test:package` (CI does).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoryWeb, unreachablePaths } from '../docs/repository-paths.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const link = (name: string): string => join(ROOT, 'node_modules', name);

let work: string;
let tarball: string;
let server: { url: string; process: ChildProcess } | undefined;

const npm = (cwd: string, args: string[]): string =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

function project(name: string, packageJson: object, files: Record<string, string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, version: '1.0.0', ...packageJson }, null, 2));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

const tsc = (dir: string): string => {
  try {
    return execFileSync(process.execPath, [TSC, '-p', dir], { cwd: dir, encoding: 'utf8' });
  } catch (error) {
    throw new Error(`tsc failed in ${dir}:\n${String((error as { stdout?: string }).stdout)}`);
  }
};

const run = (dir: string, file: string, env: Record<string, string> = {}): Record<string, unknown> => {
  const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env } });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
};

const NODE_TSCONFIG = {
  compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, skipLibCheck: false, outDir: 'out', types: ['node'] },
  include: ['src'],
};

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'oncely-package-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' })) as Array<{
    filename: string;
  }>;
  tarball = join(work, packed[0]?.filename ?? '');
}, 240_000);

afterAll(() => {
  server?.process.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('ships the compiled entries, the CLI, the protocol, the licence and no sources or tests', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const file of [
      'package/dist/node.js',
      'package/dist/node.d.ts',
      'package/dist/browser.d.ts',
      'package/dist/react/index.js',
      'package/dist/react/index.d.ts',
      'package/bin/oncely.js',
      'package/docs/PROTOCOL.md',
      'package/docs/react.md',
      'package/docs/nestjs.md',
      'package/dist/server/middleware/nestjs.js',
      'package/dist/server/middleware/nestjs.d.ts',
      'package/examples/node-backend/settle-payment.ts',
      'package/examples/node-backend/README.md',
      'package/examples/batch-upload/payroll.csv',
      'package/examples/batch-upload/README.md',
      'package/LICENSE',
      'package/README.md',
    ]) {
      expect(listing).toContain(file);
    }
    expect(listing.filter((file) => /^package\/(src|test|bench\/(?!results\/))/.test(file))).toEqual([]);
  });

  it('ships no source maps, which would point at a src/ that is not in it', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    expect(listing.filter((file) => file.endsWith('.map'))).toEqual([]);
    const scripts = listing.filter((file) => /^package\/dist\/.*\.js$/.test(file));
    expect(scripts.length).toBeGreaterThan(0);
    const mapped = scripts.filter((file) => execFileSync('tar', ['-xzOf', tarball, file], { encoding: 'utf8' }).includes('sourceMappingURL'));
    expect(mapped).toEqual([]);
  });

  it("holds no path of the machine it was built on, in any file (a doc's illustrative paths aside)", () => {
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked, { recursive: true });
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)]));
    // Paths a reader sees as examples (a JSDoc's `--db /tmp/oncely.db`); anything else under these roots is a leak.
    const illustrative = new Set(['/home/ada', '/home/ada/.oncely/journal.db', '/tmp/oncely.db', '/tmp/demo/oncely.db']);
    const found: string[] = [];
    for (const file of files(unpacked)) {
      const text = readFileSync(file, 'utf8');
      if (text.includes(ROOT.replace(/\/$/, ''))) found.push(`${file.slice(unpacked.length)}: ${ROOT}`);
      for (const [, path] of text.matchAll(/(?<![\w.~-])(\/(?:work|home|tmp|root|Users)\/[^\s'"`)\]]*)/g)) {
        if (!illustrative.has(path!)) found.push(`${file.slice(unpacked.length)}: ${path}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('names no path of the repository a reader of the package cannot reach: each is in the tarball or linked at the repository', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
      .split('\n')
      .filter((file) => file.startsWith('package/'))
      .map((file) => file.slice('package/'.length));
    const shipped = (path: string): boolean => listing.some((file) => file === path || file.startsWith(`${path.replace(/\/$/, '')}/`));
    const packed = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as { repository?: { url?: string } };
    const world = { web: repositoryWeb(packed), shipped, inRepository: (path: string) => existsSync(join(ROOT, path)) };
    const pages = listing.filter((file) => file.endsWith('.md'));
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/browser.md', 'docs/PROTOCOL.md', 'examples/node-backend/README.md']));
    const found = pages.flatMap((page) =>
      unreachablePaths(execFileSync('tar', ['-xzOf', tarball, `package/${page}`], { encoding: 'utf8' }), world).map((why) => `${page}: ${why}`),
    );
    expect(found).toEqual([]);
  });

  it('holds every file the README links to, so its links resolve in the published package', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    const links = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/\]\(([^)#:]+)(?:#[^)]*)?\)/g)].map((match) => match[1] as string);
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((link) => !listing.includes(`package/${link}`))).toEqual([]);
  });
});

describe('a Node ESM TypeScript project (nodenext, skipLibCheck: false)', () => {
  let dir: string;
  beforeAll(() => {
    dir = project(
      'node-esm',
      { type: 'module' },
      {
        'tsconfig.json': JSON.stringify(NODE_TSCONFIG),
        // The README's Node backend snippet, made self-contained.
        'src/pay.ts': `
import { createClient, sqliteJournal, isOncelyError, type OperationResult } from 'oncely';

const client = createClient({
  baseUrl: process.env.ONCELY_URL ?? 'http://127.0.0.1:8787',
  headers: { authorization: 'Bearer test_acme' },
  journal: sqliteJournal({ path: './journal.db' }),
  scope: 'settlement',
});
await client.resume();
try {
  const r: OperationResult<{ id: string }> = await client.post('v1/payments', {
    json: { amount: 1250, currency: 'EUR', reference: 'inv-7' },
    naturalKey: ['pay_1001', 'principal'],
  });
  console.log(JSON.stringify({ status: r.status, id: r.data.id, source: r.source, replayed: r.replayed, scope: client.scope }));
} catch (error) {
  console.log(JSON.stringify({ error: isOncelyError(error) ? error.code : String(error) }));
} finally {
  await client.close();
}
`,
        'src/missing-driver.ts': `
import { createClient } from 'oncely/node';
const client = createClient({ baseUrl: 'http://127.0.0.1:9', scope: 'settlement' });
try {
  await client.post('v1/payments', { json: {} });
} catch (error) {
  console.log(JSON.stringify({ message: (error as Error).message }));
}
`,
      },
    );
    npm(dir, ['install', tarball, link('better-sqlite3'), link('@hono/node-server'), link('pino'), link('@types/node')]);
  }, 240_000);

  it('typechecks and pays once against `oncely serve` from the installed bin; a rerun returns the same payment', async () => {
    tsc(dir);
    server = await startServe(dir);
    const first = run(dir, 'out/pay.js', { ONCELY_URL: server.url });
    expect(first).toMatchObject({ status: 201, source: 'server', replayed: false, scope: `${server.url}#settlement` });
    const second = run(dir, 'out/pay.js', { ONCELY_URL: server.url });
    // The journal holds the settled answer: the same payment, no second request, and it says so.
    expect(second).toEqual({ ...first, source: 'journal', replayed: true });
  }, 120_000);

  it('npx oncely upload: a wrong token exits 1 with rows pending; two rows of one key are both reported, nothing sent', async () => {
    server ??= await startServe(dir);
    const csv = join(dir, 'payroll.csv');
    writeFileSync(
      csv,
      'client_ref,operation,value_date,amount,currency,reference\nr-1,pay,2026-12-01,100,EUR,a\nr-2,pay,2026-12-01,200,EUR,b\nr-1,pay,2026-12-01,300,EUR,c\n',
    );
    const oncely = join(dir, 'node_modules/.bin/oncely');
    const upload = (token: string, report: string) =>
      spawnSync(oncely, ['upload', csv, '--url', `${server!.url}/v1/payments`, '--token', token, '--journal', join(dir, 'upload.db'), '--report', report], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
      });
    const wrong = upload('wrong-token', join(dir, 'wrong.json'));
    expect(wrong.status).toBe(1);
    expect(wrong.stdout).toContain('unauthorized: check --token');
    const wrongReport = JSON.parse(readFileSync(join(dir, 'wrong.json'), 'utf8')) as {
      complete: boolean;
      executed: number;
      invalidRows: Array<{ line: number }>;
    };
    expect([wrongReport.complete, wrongReport.executed, wrongReport.invalidRows.map((row) => row.line)]).toEqual([false, 0, [2, 4]]);
    const right = upload('test_acme', join(dir, 'right.json'));
    expect(right.status).toBe(0);
    const rightReport = JSON.parse(readFileSync(join(dir, 'right.json'), 'utf8')) as { complete: boolean; executed: number; invalid: number };
    expect([rightReport.complete, rightReport.executed, rightReport.invalid]).toEqual([true, 1, 2]);
  }, 120_000);

  it('runs the examples it ships as their READMEs say: the settlement worker where it is installed, the sample payroll through npx oncely upload', async () => {
    server ??= await startServe(dir);
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const settle = (journal: string): Array<{ step: string; status: number; replayed: boolean }> => {
      const worker = ['--import', tsx, 'node_modules/oncely/examples/node-backend/settle-payment.ts', 'pay_2001', 'pay_2002'];
      const env = { ...process.env, ONCELY_URL: server!.url, ONCELY_TOKEN: 'test_acme', ONCELY_JOURNAL: join(dir, journal) };
      const out = execFileSync(process.execPath, worker, { cwd: dir, encoding: 'utf8', env });
      return out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { step: string; status: number; replayed: boolean });
    };
    expect(settle('settle-a.db').map((step) => [step.step, step.status, step.replayed])).toEqual([
      ['principal', 201, false],
      ['fee', 201, false],
      ['principal', 201, false],
      ['fee', 201, false],
    ]);
    // Run again on a fresh journal: the derived keys make the server replay every step.
    expect(settle('settle-b.db').map((step) => step.replayed)).toEqual([true, true, true, true]);

    copyFileSync(join(dir, 'node_modules/oncely/examples/batch-upload/payroll.csv'), join(dir, 'payroll.csv'));
    const oncely = join(dir, 'node_modules/.bin/oncely');
    const dry = spawnSync(oncely, ['upload', 'payroll.csv', '--dry-run'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(dry.stdout).toMatch(/dry run of payroll\.csv: nothing was sent\n\s+rows\s+24\n\s+valid\s+23\n\s+invalid\s+1/);
    const args = ['upload', 'payroll.csv', '--url', `${server.url}/v1/payments`, '--token', 'test_acme', '--journal', 'payroll-journal.db'];
    const upload = spawnSync(oncely, [...args, '--report', 'payroll-report.json'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(upload.status, upload.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'payroll-report.json'), 'utf8')) as { executed: number; declined: number; invalid: number };
    expect([report.executed, report.declined, report.invalid]).toEqual([22, 1, 1]);
  }, 120_000);

  it('names the package to install when an optional driver is missing', () => {
    const bare = project(
      'node-bare',
      { type: 'module' },
      { 'tsconfig.json': JSON.stringify(NODE_TSCONFIG), 'src/missing-driver.ts': readFileSync(join(dir, 'src/missing-driver.ts'), 'utf8') },
    );
    npm(bare, ['install', tarball, link('@types/node')]);
    tsc(bare);
    expect(String(run(bare, 'out/missing-driver.js').message)).toContain('npm install better-sqlite3@12');
    const serve = spawnSync(join(bare, 'node_modules/.bin/oncely'), ['serve', '--port', '0'], { cwd: bare, encoding: 'utf8', timeout: 30_000 });
    expect(serve.status).toBe(1);
    // Every missing package in one run, with one command: not one package per run.
    expect(serve.stderr).toContain('npm install @hono/node-server@2 pino@10 better-sqlite3@12');
  }, 240_000);
});

describe('a CommonJS TypeScript project (type: commonjs, module: nodenext)', () => {
  it('compiles require("oncely") and runs it', async () => {
    const dir = project(
      'node-cjs',
      { type: 'commonjs' },
      {
        'tsconfig.json': JSON.stringify(NODE_TSCONFIG),
        'src/pay.ts': `
import { createClient, memoryJournal } from 'oncely';

async function main(): Promise<void> {
  const client = createClient({ baseUrl: process.env.ONCELY_URL ?? '', headers: { authorization: 'Bearer test_acme' }, journal: memoryJournal() });
  const r = await client.post<{ id: string }>('v1/payments', { json: { amount: 990, currency: 'EUR', reference: 'cjs-1' } });
  console.log(JSON.stringify({ status: r.status, replayed: r.replayed }));
  await client.close();
}
void main();
`,
      },
    );
    npm(dir, ['install', tarball, link('@types/node')]);
    tsc(dir);
    expect(readFileSync(join(dir, 'out/pay.js'), 'utf8')).toContain('require("oncely")');
    server ??= await startServe(join(work, 'node-esm'));
    expect(run(dir, 'out/pay.js', { ONCELY_URL: server.url })).toEqual({ status: 201, replayed: false });
  }, 240_000);
});

describe('an Express, a Hono, a Fastify app and a web-standard handler (nodenext, skipLibCheck: false)', () => {
  it('typecheck with the middleware in front of an unchanged handler, execute once and replay', () => {
    const app = (framework: string, setup: string): string => `
import { sqliteKeyStore } from 'oncely/server/sqlite';
${setup}
const { port, close } = await start();
const post = (body: string) =>
  fetch(\`http://127.0.0.1:\${port}/v1/orders\`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' }, body });
const first = await post('{"item":"book","qty":1}');
const again = await post('{"qty":1,"item":"book"}');
const other = await post('{"item":"lamp"}');
console.log(JSON.stringify({ framework: '${framework}', runs, statuses: [first.status, again.status, other.status], replay: again.headers.get('idempotency-replay'), same: (await first.text()) === (await again.text()) }));
await close();
await store.close();
`;
    const dir = project(
      'frameworks',
      { type: 'module' },
      {
        'tsconfig.json': JSON.stringify(NODE_TSCONFIG),
        'src/express.ts': app(
          'express',
          `import express from 'express';
import type { AddressInfo } from 'node:net';
import { idempotent } from 'oncely/express';
const store = sqliteKeyStore({ path: './express.db' });
await store.migrate();
let runs = 0;
const server = express();
server.use(express.json());
server.post('/v1/orders', idempotent({ store, clientId: () => 'acme' }), (req, res) => {
  runs += 1;
  res.status(201).json({ id: \`ord_\${req.oncely?.key}\`, item: req.body.item });
});
const start = async () => {
  const listening = server.listen(0, '127.0.0.1');
  await new Promise((resolve) => listening.once('listening', resolve));
  return { port: (listening.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => listening.close(() => resolve())) };
};`,
        ),
        'src/hono.ts': app(
          'hono',
          `import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { idempotent } from 'oncely/hono';
const store = sqliteKeyStore({ path: './hono.db' });
await store.migrate();
let runs = 0;
const server = new Hono();
server.post('/v1/orders', idempotent({ store, clientId: () => 'acme' }), async (c) => {
  runs += 1;
  const { item } = await c.req.json<{ item: string }>();
  return c.json({ id: \`ord_\${c.get('oncely').key}\`, item }, 201);
});
const start = async () => {
  const listening = serve({ fetch: server.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => listening.once('listening', resolve));
  return { port: (listening.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => listening.close(() => resolve())) };
};`,
        ),
        'src/fastify.ts': app(
          'fastify',
          `import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { idempotent } from 'oncely/fastify';
const store = sqliteKeyStore({ path: './fastify.db' });
await store.migrate();
let runs = 0;
const server = Fastify();
server.post<{ Body: { item: string } }>('/v1/orders', idempotent({ store, clientId: () => 'acme' }), async (request, reply) => {
  runs += 1;
  return reply.code(201).send({ id: \`ord_\${request.oncely?.key}\`, item: request.body.item });
});
const start = async () => {
  await server.listen({ port: 0, host: '127.0.0.1' });
  return { port: (server.server.address() as AddressInfo).port, close: () => server.close() };
};`,
        ),
        'src/web.ts': app(
          'web',
          `import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { withIdempotency } from 'oncely/web';
const store = sqliteKeyStore({ path: './web.db' });
await store.migrate();
let runs = 0;
// As a Next.js route file exports it: (request, { params }).
export const POST = withIdempotency(
  async (request, oncely, { params }: { params: Promise<{ version: string }> }) => {
    runs += 1;
    const { item } = (await request.json()) as { item: string };
    return Response.json({ id: \`ord_\${oncely?.key}\`, item, version: (await params).version }, { status: 201 });
  },
  { store, clientId: (request) => request.headers.get('x-account-id') ?? 'acme' },
);
const start = async () => {
  const listening = serve({ fetch: (request) => POST(request, { params: Promise.resolve({ version: 'v1' }) }), port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => listening.once('listening', resolve));
  return { port: (listening.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => listening.close(() => resolve())) };
};`,
        ),
      },
    );
    npm(dir, ['install', tarball, ...['better-sqlite3', 'express', '@types/express', 'hono', '@hono/node-server', 'fastify', '@types/node'].map(link)]);
    tsc(dir);
    for (const framework of ['express', 'hono', 'fastify', 'web']) {
      expect(run(dir, `out/${framework}.js`)).toEqual({ framework, runs: 1, statuses: [201, 201, 422], replay: 'true', same: true });
    }
  }, 240_000);
});

describe('a NestJS app on platform-express and platform-fastify (nodenext, decorators, skipLibCheck: false)', () => {
  it('typechecks @Idempotent() and @OncelyTx() as a Nest app compiles them, executes once in the transaction and replays', () => {
    const dir = project(
      'nestjs',
      { type: 'module' },
      {
        'tsconfig.json': JSON.stringify({
          ...NODE_TSCONFIG,
          compilerOptions: { ...NODE_TSCONFIG.compilerOptions, experimentalDecorators: true, emitDecoratorMetadata: true },
        }),
        'src/main.ts': `
import { Body, Controller, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Idempotent, OncelyModule, OncelyTx, type Tx } from 'oncely/nestjs';
import { sqliteKeyStore } from 'oncely/server/sqlite';

const store = sqliteKeyStore({ path: './nest.db' });
await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS orders (item TEXT NOT NULL)', postgres: '' });
let runs = 0;

@Controller('v1/orders')
class OrdersController {
  @Post()
  @Idempotent({ transaction: true })
  async create(@Body() body: { item: string }, @OncelyTx() tx: Tx) {
    runs += 1;
    await tx.run('INSERT INTO orders (item) VALUES ($1)', [body.item]);
    return { item: body.item, runs };
  }
}

@Module({ imports: [OncelyModule.forRoot({ store, clientId: (req) => String(req.headers['x-account'] ?? '') || null })], controllers: [OrdersController] })
class AppModule {}

const results: Record<string, unknown> = {};
for (const platform of ['express', 'fastify']) {
  const app = platform === 'fastify' ? await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false }) : await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const post = (body: string) =>
    fetch(url + '/v1/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'k-' + platform, 'x-account': 'acme' }, body });
  const first = await post('{"item":"book","qty":1}');
  const again = await post('{"qty":1,"item":"book"}');
  const other = await post('{"item":"lamp"}');
  results[platform] = { statuses: [first.status, again.status, other.status], replay: again.headers.get('idempotency-replay'), same: (await first.text()) === (await again.text()) };
  await app.close();
}
const rows = await store.transaction((tx) => tx.all('SELECT item FROM orders'));
console.log(JSON.stringify({ ...results, runs, rows: rows.length }));
await store.close();
`,
      },
    );
    const nest = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/platform-fastify', 'reflect-metadata', 'rxjs'];
    npm(dir, ['install', tarball, ...[...nest, 'better-sqlite3', '@types/node'].map(link)]);
    tsc(dir);
    const once = { statuses: [201, 201, 422], replay: 'true', same: true };
    expect(run(dir, 'out/main.js')).toEqual({ express: once, fastify: once, runs: 2, rows: 2 });
  }, 240_000);
});

describe('a Vite browser project', () => {
  it('typechecks indexedDbJournal from "oncely" and bundles no driver and no node: module', () => {
    const dir = project(
      'vite-app',
      { type: 'module', scripts: { build: 'vite build' } },
      {
        'index.html': '<!doctype html><html><body><button id="pay">Pay</button><script type="module" src="/src/main.ts"></script></body></html>',
        'tsconfig.json': JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'ESNext',
            moduleResolution: 'bundler',
            lib: ['ES2022', 'DOM', 'DOM.Iterable'],
            strict: true,
            skipLibCheck: false,
            noEmit: true,
            types: [],
          },
          include: ['src'],
        }),
        'src/main.ts': `
import { createClient, indexedDbJournal, isOncelyError } from 'oncely';

const client = createClient({ baseUrl: '/api', journal: indexedDbJournal({ dbName: 'checkout' }), scope: 'checkout' });
document.querySelector('#pay')?.addEventListener('click', async () => {
  const op = await client.prepare('POST', 'v1/payments', { json: { amount: 4900, currency: 'EUR', reference: 'ord-42' }, naturalKey: ['checkout', 'ord-42'] });
  try {
    const r = await op.send();
    document.body.dataset.state = r.replayed ? 'paid (replayed)' : 'paid';
  } catch (error) {
    document.body.dataset.state = isOncelyError(error, 'OPERATION_PENDING') ? 'pending' : 'failed';
  }
});
void client.resume();
`,
      },
    );
    npm(dir, ['install', tarball, 'vite@7.3.8']);
    execFileSync(process.execPath, [TSC, '-p', dir], { cwd: dir, encoding: 'utf8' });
    execFileSync('npx', ['vite', 'build', '--logLevel', 'warn'], { cwd: dir, encoding: 'utf8' });
    const assets = join(dir, 'dist/assets');
    const bundle = readdirSync(assets)
      .filter((file) => file.endsWith('.js'))
      .map((file) => readFileSync(join(assets, file), 'utf8'))
      .join('\n');
    expect(bundle).toContain('oncely');
    // Module specifiers only: the fingerprint code feature-detects process.getBuiltinModule('node:crypto') at run time.
    const imports = [...bundle.matchAll(/(?:from|import\(|require\()\s*["']([^"']+)["']/g)].map((match) => match[1] as string);
    expect(imports.filter((specifier) => /^(node:|better-sqlite3|pg$|pino|@hono)/.test(specifier))).toEqual([]);
    expect(['better-sqlite3', 'pg-protocol', 'pino'].filter((needle) => bundle.includes(needle))).toEqual([]);
    const installed = readdirSync(join(dir, 'node_modules'));
    expect(installed.filter((name) => ['better-sqlite3', 'pg', 'pino', '@hono'].includes(name))).toEqual([]);
  }, 300_000);
});

/** Starts the installed package's `oncely serve` in `dir` and waits for its listening line. */
async function startServe(dir: string): Promise<{ url: string; process: ChildProcess }> {
  const child = spawn(join(dir, 'node_modules/.bin/oncely'), ['serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`oncely serve did not start: ${stderr}`)), 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`oncely serve exited ${String(code)}: ${stderr}`)));
  });
  return { url, process: child };
}

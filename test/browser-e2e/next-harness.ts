/**
 * The Next.js app of `next-checkout.e2e.ts` (`test/browser-e2e/next-app/`) as a user builds and
 * runs it: the package packed (`npm pack`) and unpacked into the app's `node_modules/oncely`, then
 * `next build` and `next start` on a loopback port. The app is copied under `test-results/`
 * (ignored by git) so that `next`, `react` and `better-sqlite3` resolve from this repository's
 * node_modules, and it has a package.json of its own, so `oncely` is the unpacked package, not
 * this repository resolving itself. Nothing is fetched: telemetry is off, the app uses no
 * next/font and no image optimizer.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const NEXT = join(root, 'node_modules/next/dist/bin/next');
const ENV = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };

/** The app built, with what each step took (the CI cost of this suite). */
export interface BuiltNextApp {
  readonly dir: string;
  readonly packMs: number;
  readonly buildMs: number;
  remove(): Promise<void>;
}

/** Packs the package, unpacks it into a copy of the app, and runs `next build` there. */
export async function buildNextApp(): Promise<BuiltNextApp> {
  const dir = join(root, 'test-results', `next-app-${process.pid}`);
  const scratch = await mkdtemp(join(tmpdir(), 'oncely-next-'));
  await rm(dir, { recursive: true, force: true });
  await cp(fileURLToPath(new URL('./next-app/', import.meta.url)), dir, { recursive: true });
  const packing = Date.now();
  const tarball = execFileSync('npm', ['pack', '--pack-destination', scratch, '--silent'], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()!;
  await mkdir(join(dir, 'node_modules/oncely'), { recursive: true });
  execFileSync('tar', ['xzf', join(scratch, tarball), '-C', join(dir, 'node_modules/oncely'), '--strip-components=1']);
  const packMs = Date.now() - packing;
  const building = Date.now();
  // The build imports each route module to read its configuration: the store opens its file then.
  execFileSync(process.execPath, [NEXT, 'build'], { cwd: dir, env: { ...ENV, ONCELY_NEXT_DB: join(scratch, 'build.db') }, stdio: 'pipe' });
  const buildMs = Date.now() - building;
  return {
    dir,
    packMs,
    buildMs,
    remove: async () => {
      await rm(dir, { recursive: true, force: true });
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/** A port free on loopback now (the server binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A running `next start` of the built app, on its own key store. */
export interface NextServer {
  readonly origin: string;
  /** What the server printed on stderr, and on stdout before it was ready. */
  output(): string;
  /** The keys of the payments the app committed for an order (its `GET /api/payments`). */
  payments(reference: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** Starts `next start` on a free loopback port and waits until it is ready. */
export async function startNextApp(dir: string): Promise<NextServer> {
  const data = await mkdtemp(join(tmpdir(), 'oncely-next-db-'));
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [NEXT, 'start', '-p', String(port), '-H', '127.0.0.1'], {
    cwd: dir,
    env: { ...ENV, ONCELY_NEXT_DB: join(data, 'keys.db') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`next start was not ready within 60 s\n${output}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`next start exited with ${String(code)}\n${output}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      if (!/Ready in/.test(line)) return;
      clearTimeout(timer);
      resolve();
    });
  });
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    output: () => output,
    async payments(reference) {
      const response = await fetch(`${origin}/api/payments?reference=${encodeURIComponent(reference)}`);
      if (!response.ok) throw new Error(`GET /api/payments: ${response.status}\n${output}`);
      return ((await response.json()) as { keys: string[] }).keys;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(data, { recursive: true, force: true });
    },
  };
}

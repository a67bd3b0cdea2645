/**
 * What the checkout end-to-end tests share: the page built into a temporary folder, a real
 * `oncely serve` process serving it next to the API, and Debian's Chromium driven by
 * Playwright. Nothing here skips: without /usr/bin/chromium `launchChromium` throws, so the
 * suite fails in CI instead of passing empty.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright';
import { buildCheckout } from '../../examples/checkout-browser/build.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The demo caller the page pays as (the reference server's built-in `test_acme`). */
export const TOKEN = 'test_acme';

/** One ledger entry as `GET /v1/ledger` returns it. */
export interface LedgerEntry {
  readonly payment_id: string;
  readonly amount: number;
  readonly currency: string;
  readonly idempotency_key: string;
}

/** One charge as `GET /v1/rail/charges` returns it: what the card rail behind the server was asked to charge. */
export interface RailCharge {
  readonly charge_id: string;
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

/** A running `oncely serve` with the checkout page as its static folder. */
export interface CheckoutServer {
  /** Origin of the page and the API, e.g. `http://127.0.0.1:41234`. */
  readonly origin: string;
  /** The ledger entries of the demo caller. */
  ledger(): Promise<LedgerEntry[]>;
  /** Ledger entries written under `key`. */
  entriesFor(key: string): Promise<LedgerEntry[]>;
  /** The rail's charges for the order `reference`. */
  chargesFor(reference: string): Promise<RailCharge[]>;
  stop(): Promise<void>;
}

/** Builds the page once into a fresh temporary folder; resolves to that folder. */
export async function buildPage(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'oncely-checkout-'));
  await buildCheckout({ outDir: dir, minify: false });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Starts `oncely serve --port 0` on a throwaway SQLite file and waits for its first line,
 * `oncely listening on http://HOST:PORT`.
 */
export async function startServer(staticDir: string, faults = ''): Promise<CheckoutServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'oncely-checkout-db-'));
  const args = ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dataDir, 'oncely.db'), '--static', staticDir];
  if (faults !== '') args.push('--faults', faults);
  const child: ChildProcess = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`oncely serve did not start within 30 s\n${stderr}`)), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oncely serve exited with ${String(code)} before listening\n${stderr}`));
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const match = /oncely listening on (http:\/\/\S+)/.exec(line);
      if (!match?.[1]) return;
      clearTimeout(timer);
      resolve(match[1].replace(/\/$/, ''));
    });
  });
  child.stdout?.resume();

  const ledger = async (): Promise<LedgerEntry[]> => {
    const response = await fetch(`${origin}/v1/ledger`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (!response.ok) throw new Error(`GET /v1/ledger: ${response.status}`);
    return ((await response.json()) as { entries: LedgerEntry[] }).entries;
  };
  return {
    origin,
    ledger,
    entriesFor: async (key) => (await ledger()).filter((entry) => entry.idempotency_key === key),
    async chargesFor(reference) {
      const response = await fetch(`${origin}/v1/rail/charges`, { headers: { authorization: `Bearer ${TOKEN}` } });
      if (!response.ok) throw new Error(`GET /v1/rail/charges: ${response.status}`);
      return ((await response.json()) as { charges: RailCharge[] }).charges.filter((charge) => charge.reference === reference);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Serves the checkout page from Vite's dev server (React's development build, StrictMode's
 * double effects), its `/v1` proxied to `api`; resolves to its origin and a stop function.
 */
export async function startDevServer(api: string): Promise<{ origin: string; stop(): Promise<void> }> {
  const { createServer } = await import('vite');
  const { checkoutConfig } = await import('../../examples/checkout-browser/vite.config.js');
  const config = checkoutConfig({ api });
  const server = await createServer({
    ...config,
    mode: 'development',
    server: { ...config.server, host: '127.0.0.1', port: 0, strictPort: false, hmr: false },
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (address === null || address === undefined || typeof address === 'string') throw new Error('the Vite dev server has no port');
  return { origin: `http://127.0.0.1:${address.port}`, stop: () => server.close() };
}

/** Launches Debian's Chromium headless (never a downloaded browser). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.ONCELY_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** A fresh order URL: each test pays its own order, so its key and ledger entries are its own. */
export function orderUrl(origin: string, amount = 4900): string {
  const reference = `ord-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  return `${origin}/?order=${reference}&amount=${amount}&currency=EUR`;
}

/** Waits until the page shows `status` and resolves to the key it shows. */
export async function waitForStatus(page: Page, status: string, timeout = 30_000): Promise<string> {
  await page.locator(`main[data-status="${status}"]`).waitFor({ timeout });
  return (await page.locator('main').getAttribute('data-key')) ?? '';
}

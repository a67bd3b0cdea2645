/**
 * A shop page on one origin (`http://127.0.0.1:A`, served by one `oncely serve --static`) pays
 * through the reference server on another (`http://localhost:B`, started with
 * `--cors http://127.0.0.1:A`), in Debian's Chromium: the browser's own preflight is answered, the
 * payment completes, and the page's script reads `Idempotency-Key` and `Idempotency-Replay` on the
 * replay (headers a page can read only when the server exposes them). Without `--cors` the same
 * page cannot pay at all.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedSoFar, spawnServe, type Served } from '../reference/serve-process.js';
import { TOKEN, launchChromium } from './harness.js';

/** The shop's own script: pays with a key, then sends the same request again (a reload's retry). */
const SHOP = `<!doctype html>
<html><head><meta charset="utf-8"><title>shop</title></head>
<body><main>shop</main>
<script>
  window.payTwice = async (api, token, key) => {
    const send = () => fetch(api + '/v1/payments', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + token, 'idempotency-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 4900, currency: 'EUR', reference: key }),
    });
    const read = async (response) => ({
      status: response.status,
      key: response.headers.get('Idempotency-Key'),
      replay: response.headers.get('Idempotency-Replay'),
      body: await response.text(),
    });
    try {
      const first = await read(await send());
      const again = await read(await send());
      return { origin: location.origin, first, again };
    } catch (error) {
      return { origin: location.origin, failed: String(error) };
    }
  };
</script></body></html>`;

interface Answer {
  readonly status: number;
  readonly key: string | null;
  readonly replay: string | null;
  readonly body: string;
}
type Paid = { readonly origin: string; readonly first?: Answer; readonly again?: Answer; readonly failed?: string };

const dir = mkdtempSync(join(tmpdir(), 'oncely-cross-origin-'));
let shop: Served;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  writeFileSync(join(dir, 'shop.html'), SHOP);
  shop = await spawnServe(['--db', join(dir, 'shop.db'), '--static', dir, '--quiet']);
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${shop.url}/shop.html`);
});
afterAll(async () => {
  await browser?.close();
  await shop?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The API server on the same machine as the shop, under another origin: `localhost`, its own port. */
async function startApi(args: readonly string[]): Promise<{ served: Served; origin: string }> {
  const served = await spawnServe(['--db', join(dir, `api-${Date.now()}.db`), ...args]);
  return { served, origin: served.url.replace('//127.0.0.1:', '//localhost:') };
}

/** The request lines the server logged (pino JSON) for the requests it answered so far, by method. */
const logged = async (served: Served, method: string): Promise<Array<{ path: string; status: number }>> =>
  (await loggedSoFar(served)).map((line) => JSON.parse(line) as { method?: string; path: string; status: number }).filter((line) => line.method === method);

const ledgerFor = async (api: Served, key: string): Promise<number> => {
  const response = await fetch(`${api.url}/v1/ledger`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const { entries } = (await response.json()) as { entries: Array<{ idempotency_key: string }> };
  return entries.filter((entry) => entry.idempotency_key === key).length;
};

describe('a page on another origin, in Chromium', () => {
  it('pays through the real preflight with --cors, and its script reads Idempotency-Replay: true on the replay', async () => {
    const api = await startApi(['--cors', new URL(shop.url).origin]);
    try {
      const key = `cross-origin-${Date.now().toString(36)}`;
      const paid = await page.evaluate(
        ([origin, token, k]) => (window as unknown as { payTwice(a: string, t: string, k: string): Promise<Paid> }).payTwice(origin, token, k),
        [api.origin, TOKEN, key] as const,
      );
      expect(paid.failed).toBeUndefined();
      expect(paid.origin).toBe(new URL(shop.url).origin);
      expect(new URL(api.origin).origin).not.toBe(paid.origin);
      expect(paid.first).toMatchObject({ status: 201, key, replay: null });
      expect(paid.again).toMatchObject({ status: 201, key, replay: 'true', body: paid.first?.body });
      // Chromium asked first (Authorization, Idempotency-Key and a JSON body are not "simple").
      expect(await logged(api.served, 'OPTIONS')).toContainEqual(expect.objectContaining({ path: '/v1/payments', status: 204 }));
      expect((await logged(api.served, 'POST')).map((line) => line.status)).toEqual([201, 201]);
      expect(await ledgerFor(api.served, key)).toBe(1);
    } finally {
      await api.served.stop();
    }
  });

  it('cannot pay without --cors: Chromium refuses the preflight and never sends the POST', async () => {
    const api = await startApi([]);
    try {
      const key = `no-cors-${Date.now().toString(36)}`;
      const paid = await page.evaluate(
        ([origin, token, k]) => (window as unknown as { payTwice(a: string, t: string, k: string): Promise<Paid> }).payTwice(origin, token, k),
        [api.origin, TOKEN, key] as const,
      );
      expect(paid.failed).toMatch(/TypeError/);
      expect((await logged(api.served, 'OPTIONS')).length).toBeGreaterThan(0);
      expect(await logged(api.served, 'POST')).toEqual([]);
      expect(await ledgerFor(api.served, key)).toBe(0);
    } finally {
      await api.served.stop();
    }
  });
});

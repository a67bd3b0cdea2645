/**
 * A Next.js App Router app (`next-app/`): a client component on `oncely/react` pays through the
 * app's own route handler, `export const POST = withIdempotency(…)` from `oncely/web` with
 * `transaction: true`, built with `next build` against the packed package and started with
 * `next start`, driven in Debian's Chromium. Each test pays its own order; the app's own
 * `payments` table (written through the guard's `tx`) counts the payments.
 */
import type { Browser, BrowserContext, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './harness.js';
import { buildNextApp, startNextApp, type BuiltNextApp, type NextServer } from './next-harness.js';

let browser: Browser;
let built: BuiltNextApp;
let server: NextServer;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  built = await buildNextApp();
  // What this suite costs CI, beside its tests (the lead's budget for the e2e stage).
  console.log(`[next e2e] npm pack ${built.packMs} ms, next build ${built.buildMs} ms`);
  server = await startNextApp(built.dir);
  browser = await launchChromium();
}, 600_000);

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await built?.remove();
});

async function newTab(): Promise<{ context: BrowserContext; tab: Page }> {
  const context = await browser.newContext();
  contexts.push(context);
  return { context, tab: await context.newPage() };
}

/** A fresh order (`slow-` orders take 3 s in the handler). */
const newOrder = (prefix = 'ord'): string => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** Waits until the checkout shows `state` and resolves to the operation's key. */
async function waitForState(tab: Page, state: string, timeout = 30_000): Promise<string> {
  await tab.locator(`main[data-state="${state}"]`).waitFor({ timeout });
  return (await tab.locator('main').getAttribute('data-key')) ?? '';
}

/** The Idempotency-Key of every payment request the tab sends. */
function recordKeys(tab: Page): string[] {
  const keys: string[] = [];
  tab.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/payments') keys.push(request.headers()['idempotency-key'] ?? '');
  });
  return keys;
}

describe('a Next.js app: a client component on oncely/react paying through its own withIdempotency route handler', () => {
  it('renders the checkout on the server, where its module creates the client with a relative baseUrl, without an error', async () => {
    // Before any script runs: the HTML Next.js rendered, client component included.
    const response = await fetch(`${server.origin}/?order=ord-ssr&amount=4900`);
    const html = await response.text();
    expect(response.status, html).toBe(200);
    expect(html).toMatch(/<main data-state="loading" data-key=""><h1>Order <!-- -->ord-ssr<\/h1><\/main>/);
    expect(server.output()).not.toMatch(/error/i);
  });

  it('pays once when Pay is double-clicked', async () => {
    const { tab } = await newTab();
    const keys = recordKeys(tab);
    const order = newOrder();
    await tab.goto(`${server.origin}/?order=${order}&amount=4900`);
    const key = await waitForState(tab, 'prepared');

    await tab.dblclick('[data-action="pay"]');

    expect(await waitForState(tab, 'succeeded')).toBe(key);
    expect(await server.payments(order)).toEqual([key]);
    expect(keys).toEqual([key]);
  });

  it('resumes a payment after a reload mid-payment, with the same key, and pays once', async () => {
    const { tab } = await newTab();
    const keys = recordKeys(tab);
    const order = newOrder('slow');
    await tab.goto(`${server.origin}/?order=${order}&amount=4900`);
    const key = await waitForState(tab, 'prepared');
    const sent = tab.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/api/payments'));
    await tab.click('[data-action="pay"]');
    await sent;

    await tab.reload();

    expect(await waitForState(tab, 'succeeded', 45_000)).toBe(key);
    expect(await server.payments(order)).toEqual([key]);
    // The reloaded page sent the journaled payment again: same key, and the handler ran once.
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(new Set(keys)).toEqual(new Set([key]));
  });

  it('keeps the payment pending while offline and pays it once back online', async () => {
    const { context, tab } = await newTab();
    const order = newOrder();
    await tab.goto(`${server.origin}/?order=${order}&amount=4900`);
    const key = await waitForState(tab, 'prepared');

    await context.setOffline(true);
    await tab.click('[data-action="pay"]');
    expect(await waitForState(tab, 'pending')).toBe(key);
    expect(await server.payments(order)).toEqual([]);

    await context.setOffline(false);

    expect(await waitForState(tab, 'succeeded')).toBe(key);
    expect(await server.payments(order)).toEqual([key]);
  });
});

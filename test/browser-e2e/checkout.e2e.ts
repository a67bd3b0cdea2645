/**
 * The checkout page in Debian's Chromium against a real `oncely serve`: whatever the customer
 * or the network does, the ledger holds one entry per order.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPage, launchChromium, orderUrl, startServer, waitForStatus, type CheckoutServer } from './harness.js';
import { recordPayments, type PaymentRequest } from './payment-requests.js';

const screenshot = fileURLToPath(new URL('../../test-results/checkout-paid.png', import.meta.url));
/** ext2 (the rail charge) takes this long: long enough to reload or open a tab mid-payment. */
const SLOW_RAIL_MS = 3_000;

let browser: Browser;
let page: { dir: string; remove(): Promise<void> };
let server: CheckoutServer;
let slowServer: CheckoutServer;
const contexts: BrowserContext[] = [];

async function newPage(): Promise<{ context: BrowserContext; tab: Page }> {
  const context = await browser.newContext();
  contexts.push(context);
  return { context, tab: await context.newPage() };
}

beforeAll(async () => {
  // One at a time, so that when one fails (no Chromium in CI) those already started are
  // assigned and afterAll stops them.
  browser = await launchChromium();
  page = await buildPage();
  server = await startServer(page.dir);
  slowServer = await startServer(page.dir, `slow:ext2:${SLOW_RAIL_MS}`);
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), slowServer?.stop()]);
  await page?.remove();
});

describe('the checkout page', () => {
  it('charges once when Pay is double-clicked, and saves a screenshot of the paid state', async () => {
    const { tab } = await newPage();
    const requests = recordPayments(tab, 'tab');
    await tab.goto(orderUrl(server.origin));
    const key = await waitForStatus(tab, 'pending');

    await tab.dblclick('[data-action="pay"]');

    expect(await waitForStatus(tab, 'paid')).toBe(key);
    expect(await server.entriesFor(key)).toHaveLength(1);
    expect(requests.map((request) => [request.key, request.status])).toEqual([[key, 201]]);
    await mkdir(fileURLToPath(new URL('../../test-results/', import.meta.url)), { recursive: true });
    await tab.screenshot({ path: screenshot });
  });

  it('resumes the payment with the same key after a reload mid-payment, shows it paid, and charges once', async () => {
    const { tab } = await newPage();
    const requests = recordPayments(tab, 'tab');
    await tab.goto(orderUrl(slowServer.origin));
    const key = await waitForStatus(tab, 'pending');
    const sent = tab.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/v1/payments'));

    await tab.click('[data-action="pay"]');
    await sent;
    // The server is now inside the slow rail call for this key; the browser drops the request.
    await tab.reload();

    expect(await waitForStatus(tab, 'paid', 45_000)).toBe(key);
    expect(await slowServer.entriesFor(key)).toHaveLength(1);
    // The reloaded page sent the payment again by itself, under the same key.
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(new Set(requests.map((request) => request.key))).toEqual(new Set([key]));
  });

  it('waits while offline during Pay and goes through once the network is back, charging once', async () => {
    const { context, tab } = await newPage();
    await tab.goto(orderUrl(server.origin));
    const key = await waitForStatus(tab, 'pending');

    await context.setOffline(true);
    await tab.click('[data-action="pay"]');
    await waitForStatus(tab, 'confirming');
    await tab.waitForTimeout(1_500);
    expect(await tab.locator('main').getAttribute('data-status')).toBe('confirming');
    expect(await server.entriesFor(key)).toHaveLength(0);

    await context.setOffline(false);

    expect(await waitForStatus(tab, 'paid')).toBe(key);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it('sends a payment pending in two tabs from one tab at a time, and both tabs end up paid with one charge', async () => {
    const { context, tab: first } = await newPage();
    const requests: PaymentRequest[] = [];
    recordPayments(first, 'first', requests);
    const url = orderUrl(slowServer.origin);
    await first.goto(url);
    const key = await waitForStatus(first, 'pending');
    const sent = first.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/v1/payments'));
    await first.click('[data-action="pay"]');
    await sent;

    const second = await context.newPage();
    recordPayments(second, 'second', requests);
    await second.goto(url);

    expect(await waitForStatus(first, 'paid')).toBe(key);
    expect(await waitForStatus(second, 'paid')).toBe(key);
    expect(await slowServer.entriesFor(key)).toHaveLength(1);
    // One tab at a time: no request of one tab overlapped one of the other, so the server
    // never had to turn one away as in flight.
    expect(requests.map((request) => request.status)).not.toContain(409);
    for (const a of requests.filter((request) => request.tab === 'first')) {
      for (const b of requests.filter((request) => request.tab === 'second')) {
        expect(a.endedAt <= b.startedAt || b.endedAt <= a.startedAt).toBe(true);
      }
    }
  });

  it('sends an order pending in two open tabs from one tab at a time after an offline Pay, and charges once when back online', async () => {
    const { context, tab: first } = await newPage();
    const second = await context.newPage();
    const requests: PaymentRequest[] = [];
    recordPayments(first, 'first', requests);
    recordPayments(second, 'second', requests);
    const url = orderUrl(server.origin);
    await Promise.all([first.goto(url), second.goto(url)]);
    const key = await waitForStatus(first, 'pending');
    expect(await waitForStatus(second, 'pending')).toBe(key);

    await context.setOffline(true);
    await first.click('[data-action="pay"]');
    // The second tab follows the first one's Pay: both now hold the same pending operation.
    await waitForStatus(second, 'confirming');
    await first.waitForTimeout(2_000);
    await context.setOffline(false);

    expect(await waitForStatus(first, 'paid')).toBe(key);
    expect(await waitForStatus(second, 'paid')).toBe(key);
    expect(await server.entriesFor(key)).toHaveLength(1);
    expect(requests.map((request) => request.status)).not.toContain(409);
    const sorted = [...requests].sort((a, b) => a.startedAt - b.startedAt);
    for (let i = 1; i < sorted.length; i += 1) {
      const previous = sorted[i - 1]!;
      const current = sorted[i]!;
      if (previous.tab !== current.tab) expect(previous.endedAt).toBeLessThanOrEqual(current.startedAt);
    }
  });

  it('finishes a payment whose tab was closed mid-payment when another order loads, and never sends an order that was only viewed', async () => {
    const { context, tab: closed } = await newPage();
    await closed.goto(orderUrl(slowServer.origin));
    const paidKey = await waitForStatus(closed, 'pending');
    const sent = closed.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/v1/payments'));
    await closed.click('[data-action="pay"]');
    await sent;
    await closed.close();
    const viewed = await context.newPage();
    await viewed.goto(orderUrl(slowServer.origin));
    const viewedKey = await waitForStatus(viewed, 'pending');
    await viewed.close();

    const next = await context.newPage();
    const requests = recordPayments(next, 'next');
    await next.goto(orderUrl(slowServer.origin));
    const nextKey = await waitForStatus(next, 'pending');

    await next.locator(`.others li[data-key="${paidKey}"][data-status="paid"]`).waitFor({ timeout: 45_000 });
    expect(await next.locator('.others li').count()).toBe(1);
    expect(await next.locator('main').getAttribute('data-status')).toBe('pending');
    expect(requests.length).toBeGreaterThan(0);
    expect(await slowServer.entriesFor(paidKey)).toHaveLength(1);
    expect(await slowServer.entriesFor(viewedKey)).toHaveLength(0);
    expect(await slowServer.entriesFor(nextKey)).toHaveLength(0);
  });

  it('shows a declined payment as declined, charges nothing, and still shows it declined after a reload without sending again', async () => {
    const { tab } = await newPage();
    const requests = recordPayments(tab, 'tab');
    await tab.goto(orderUrl(server.origin, 2_000_000));
    const key = await waitForStatus(tab, 'pending');

    await tab.click('[data-action="pay"]');
    expect(await waitForStatus(tab, 'declined')).toBe(key);
    await tab.reload();

    expect(await waitForStatus(tab, 'declined')).toBe(key);
    expect(requests).toHaveLength(1);
    expect(await server.entriesFor(key)).toHaveLength(0);
  });
});

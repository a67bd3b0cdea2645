/**
 * The React checkout (examples/checkout-browser: `useOperation`, `usePendingOperations`) in
 * Debian's Chromium against real `oncely serve` processes, twice: from Vite's dev server (React's
 * development build, StrictMode running every effect twice) and as the production build served
 * by `oncely serve --static` with its Service Worker. Each end state is checked by the words on
 * the page, and the server counts every payment: its ledger and the charges its card rail made.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPage, launchChromium, orderUrl, startDevServer, startServer, waitForStatus, type CheckoutServer } from './harness.js';
import { recordPayments } from './payment-requests.js';
import { controlWorker, recordSentPayments } from './worker-control.js';

/** ext2 (the rail charge) takes this long on the slow server: long enough to reload or close mid-payment. */
const SLOW_RAIL_MS = 3_000;

let browser: Browser;
let built: { dir: string; remove(): Promise<void> };
let server: CheckoutServer;
let slowServer: CheckoutServer;
const devServers: Array<{ origin: string; stop(): Promise<void> }> = [];
const contexts: BrowserContext[] = [];

/** Where a mode serves the page: its origin on the normal and on the slow server. */
interface Mode {
  readonly name: 'dev' | 'production';
  readonly label: string;
  page(): string;
  slowPage(): string;
}

const modes: Mode[] = [
  {
    name: 'dev',
    label: 'from the Vite dev server (React development build, StrictMode)',
    page: () => devServers[0]!.origin,
    slowPage: () => devServers[1]!.origin,
  },
  { name: 'production', label: 'as the production build', page: () => server.origin, slowPage: () => slowServer.origin },
];

beforeAll(async () => {
  browser = await launchChromium();
  built = await buildPage();
  server = await startServer(built.dir);
  slowServer = await startServer(built.dir, `slow:ext2:${SLOW_RAIL_MS}`);
  devServers.push(await startDevServer(server.origin), await startDevServer(slowServer.origin));
  // The dev server transforms on first request: a warm-up load keeps that out of the tests.
  const warm = await browser.newContext();
  const tab = await warm.newPage();
  for (const dev of devServers) {
    await tab.goto(orderUrl(dev.origin));
    await waitForStatus(tab, 'pending', 60_000);
  }
  await warm.close();
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([...devServers.map((dev) => dev.stop()), server?.stop(), slowServer?.stop()]);
  await built?.remove();
});

async function newTab(): Promise<{ context: BrowserContext; tab: Page }> {
  const context = await browser.newContext();
  contexts.push(context);
  return { context, tab: await context.newPage() };
}

/** The badge and the sentence the customer reads. */
async function pageText(tab: Page): Promise<{ badge: string; message: string }> {
  return {
    badge: (await tab.locator('[data-field="badge"]').textContent()) ?? '',
    message: (await tab.locator('[data-field="message"]').textContent()) ?? '',
  };
}

const referenceOf = (url: string): string => new URL(url).searchParams.get('order') ?? '';
const paymentSent = (tab: Page) => tab.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/v1/payments'));

for (const mode of modes)
  describe(`the React checkout ${mode.label}`, () => {
    it('charges once when Pay is double-clicked and says so', async () => {
      const { tab } = await newTab();
      const requests = recordPayments(tab, 'tab');
      const url = orderUrl(mode.page());
      await tab.goto(url);
      const key = await waitForStatus(tab, 'pending');
      expect(await pageText(tab)).toEqual({ badge: 'Ready', message: 'Review your order, then press Pay.' });
      // The mode is what it says: Vite's dev server serves the TSX source (React's development
      // build, StrictMode's double effects); the production build serves a bundle from assets/.
      const entry = mode.name === 'dev' ? 'script[type="module"][src$="/src/main.tsx"]' : 'script[type="module"][src*="assets/index-"]';
      expect(await tab.locator(entry).count()).toBe(1);

      await tab.dblclick('[data-action="pay"]');

      expect(await waitForStatus(tab, 'paid')).toBe(key);
      expect(await pageText(tab)).toEqual({ badge: 'Paid', message: 'Payment confirmed — thank you!' });
      expect(await server.entriesFor(key)).toHaveLength(1);
      expect(await server.chargesFor(referenceOf(url))).toHaveLength(1);
      expect(requests.map((request) => [request.key, request.status])).toEqual([[key, 201]]);
      await mkdir(fileURLToPath(new URL('../../test-results/', import.meta.url)), { recursive: true });
      await tab.screenshot({ path: fileURLToPath(new URL(`../../test-results/react-checkout-${mode.name}-paid.png`, import.meta.url)) });
    });

    it('shows the outcome after a reload mid-payment, with the same key, and charges once', async () => {
      const { tab } = await newTab();
      const requests = recordPayments(tab, 'tab');
      const url = orderUrl(mode.slowPage());
      await tab.goto(url);
      const key = await waitForStatus(tab, 'pending');
      const sent = paymentSent(tab);
      await tab.click('[data-action="pay"]');
      await sent;

      await tab.reload();

      expect(await waitForStatus(tab, 'paid', 45_000)).toBe(key);
      const { badge, message } = await pageText(tab);
      expect(badge).toBe('Paid');
      expect(message).toMatch(/^(Payment confirmed|Already paid) — thank you!$/);
      expect(await slowServer.entriesFor(key)).toHaveLength(1);
      expect(await slowServer.chargesFor(referenceOf(url))).toHaveLength(1);
      expect(new Set(requests.map((request) => request.key))).toEqual(new Set([key]));
    });

    it('shows the payment pending while offline at Pay, and completes it once back online, charging once', async () => {
      const { context, tab } = await newTab();
      const url = orderUrl(mode.page());
      await tab.goto(url);
      const key = await waitForStatus(tab, 'pending');

      await context.setOffline(true);
      await tab.click('[data-action="pay"]');
      await expect
        .poll(() => pageText(tab), { timeout: 30_000 })
        .toEqual({
          badge: 'Payment pending',
          message: 'Payment pending: you are offline. It will go through once you are back — you will not be charged twice.',
        });
      expect(await server.entriesFor(key)).toHaveLength(0);

      await context.setOffline(false);

      expect(await waitForStatus(tab, 'paid')).toBe(key);
      expect((await pageText(tab)).badge).toBe('Paid');
      expect(await server.entriesFor(key)).toHaveLength(1);
      expect(await server.chargesFor(referenceOf(url))).toHaveLength(1);
    });

    it("shows a 402 as declined with the server's reason, and charges nothing", async () => {
      const { tab } = await newTab();
      const url = orderUrl(mode.page(), 2_000_000);
      await tab.goto(url);
      const key = await waitForStatus(tab, 'pending');

      await tab.click('[data-action="pay"]');

      expect(await waitForStatus(tab, 'declined')).toBe(key);
      const { badge, message } = await pageText(tab);
      expect(badge).toBe('Declined');
      expect(message).toMatch(/^Your payment was declined\. \S/);
      expect(await server.entriesFor(key)).toHaveLength(0);
      expect(await server.chargesFor(referenceOf(url))).toHaveLength(0);
    });

    it('shows a 401 as not signed in with the payment still pending, and pays once on the next Pay after signing in', async () => {
      const { tab } = await newTab();
      const url = orderUrl(mode.page());
      // A session that expired: the server refuses the page's credentials.
      await tab.route('**/v1/payments', (route) => route.continue({ headers: { ...route.request().headers(), authorization: 'Bearer expired-session' } }));
      await tab.goto(url);
      const key = await waitForStatus(tab, 'pending');

      await tab.click('[data-action="pay"]');

      expect(await waitForStatus(tab, 'signed-out')).toBe(key);
      expect(await pageText(tab)).toEqual({
        badge: 'Not signed in',
        message: 'You are not signed in: the payment is still pending and nothing was charged. Sign in, then press Pay to finish it.',
      });
      expect(await server.entriesFor(key)).toHaveLength(0);

      await tab.unroute('**/v1/payments');
      await tab.click('[data-action="pay"]');

      expect(await waitForStatus(tab, 'paid')).toBe(key);
      expect(await server.entriesFor(key)).toHaveLength(1);
      expect(await server.chargesFor(referenceOf(url))).toHaveLength(1);
    });
  });

describe('the React checkout (production) with its Service Worker', () => {
  it('has the worker finish a payment whose tab was closed mid-payment; the reopened page shows it paid without a request, charged once', async () => {
    const context = await browser.newContext();
    contexts.push(context);
    const sent = recordSentPayments(context);
    const worker = await controlWorker(browser, context, slowServer.origin);
    const url = orderUrl(slowServer.origin);
    const tab = await context.newPage();
    await tab.goto(url);
    const key = await waitForStatus(tab, 'pending');
    await worker.activated();
    const request = paymentSent(tab);
    await tab.click('[data-action="pay"]');
    await request;

    await tab.close();
    // The worker's next start (any event that wakes it) resumes what the page left submitted.
    await worker.stop();
    await worker.start();

    await expect.poll(() => sent.some((payment) => payment.sender === 'worker' && payment.status === 201), { timeout: 45_000 }).toBe(true);
    expect(sent.filter((payment) => payment.sender === 'worker').every((payment) => payment.key === key)).toBe(true);
    const before = sent.length;
    const reopened = await context.newPage();
    await reopened.goto(url);

    expect(await waitForStatus(reopened, 'paid')).toBe(key);
    expect((await pageText(reopened)).badge).toBe('Paid');
    expect(sent.slice(before)).toEqual([]);
    expect(await slowServer.entriesFor(key)).toHaveLength(1);
    expect(await slowServer.chargesFor(referenceOf(url))).toHaveLength(1);
  });
});

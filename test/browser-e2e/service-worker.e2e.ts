/**
 * The checkout's Service Worker in Debian's Chromium against a real `oncely serve`: a payment
 * whose Pay was pressed but never confirmed is finished after its tab is closed — by the
 * worker on Background Sync, on its start and on `online` — sent by one of page and worker at
 * a time, and charged once.
 */
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPage, launchChromium, orderUrl, startServer, waitForStatus, type CheckoutServer } from './harness.js';
import { controlWorker, recordSentPayments, type SentPayment, type WorkerControl } from './worker-control.js';

/** ext2 (the rail charge) takes this long on the slow server: page and worker overlap in it. */
const SLOW_RAIL_MS = 3_000;

let browser: Browser;
let page: { dir: string; remove(): Promise<void> };
let server: CheckoutServer;
let slowServer: CheckoutServer;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
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

interface Shop {
  readonly context: BrowserContext;
  readonly sent: SentPayment[];
  readonly worker: WorkerControl;
}

async function openShop(origin: string, options: BrowserContextOptions = {}): Promise<Shop> {
  const context = await browser.newContext(options);
  contexts.push(context);
  return { context, sent: recordSentPayments(context), worker: await controlWorker(browser, context, origin) };
}

/** Whether the page has a Service Worker, and whether Background Sync takes its registrations. */
type Worker = 'with sync' | 'without sync' | 'none';

/**
 * Opens `url`, waits for its worker, presses Pay while offline, waits until an attempt got no
 * answer (and, with Background Sync, registered the sync), then closes the tab, still offline.
 */
async function payOfflineThenClose(shop: Shop, url: string, worker: Worker = 'with sync'): Promise<string> {
  if (worker === 'without sync') await shop.worker.refuseBackgroundSync();
  const tab = await shop.context.newPage();
  await tab.goto(url);
  const key = await waitForStatus(tab, 'pending');
  if (worker !== 'none') await shop.worker.activated();
  await shop.context.setOffline(true);
  await tab.click('[data-action="pay"]');
  await waitForStatus(tab, 'confirming');
  await expect.poll(() => shop.sent.some((sent) => sent.sender === 'page' && sent.endedAt < Number.POSITIVE_INFINITY)).toBe(true);
  if (worker === 'none') expect(await tab.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).length)).toBe(0);
  else await expect.poll(() => syncTags(tab)).toEqual(worker === 'with sync' ? ['oncely'] : []);
  await tab.close();
  return key;
}

/** Resolves once a request of `sender` that started after `since` is in flight. */
function inFlight(shop: Shop, sender: SentPayment['sender'], since: number): Promise<void> {
  return expect
    .poll(() => shop.sent.some((sent) => sent.sender === sender && sent.startedAt >= since && sent.endedAt === Number.POSITIVE_INFINITY), { timeout: 30_000 })
    .toBe(true);
}

/** The notifications the worker's registration shows, as `[title, tag]`. */
async function workerNotifications(shop: Shop): Promise<string[][]> {
  const worker = shop.context.serviceWorkers().at(-1);
  if (!worker) throw new Error('no Service Worker is running');
  return worker.evaluate(async () => {
    const { registration } = self as unknown as { registration: ServiceWorkerRegistration };
    return (await registration.getNotifications()).map((notification) => [notification.title, notification.tag]);
  });
}

/** Fires `online` in the worker: Chromium fires none there when DevTools' offline emulation ends. */
async function workerOnline(shop: Shop): Promise<void> {
  const worker = shop.context.serviceWorkers().at(-1);
  if (!worker) throw new Error('no Service Worker is running');
  await worker.evaluate(() => void self.dispatchEvent(new Event('online')));
}

function syncTags(tab: Page): Promise<string[]> {
  return tab.evaluate(async () => {
    const registration = (await navigator.serviceWorker.ready) as ServiceWorkerRegistration & { sync: { getTags(): Promise<string[]> } };
    return registration.sync.getTags();
  });
}

const answered = (sent: readonly SentPayment[]): SentPayment[] => sent.filter((request) => request.status !== undefined);

describe('the checkout Service Worker', () => {
  it('finishes a payment whose Pay was pressed offline after the tab is closed, when the network is back and the sync fires, notifies, and the reopened page shows it paid without a request', async () => {
    const shop = await openShop(server.origin);
    await shop.worker.allowNotifications();
    const url = orderUrl(server.origin);
    const key = await payOfflineThenClose(shop, url);
    expect(await server.entriesFor(key)).toHaveLength(0);

    await shop.context.setOffline(false);
    await shop.worker.dispatchSync();

    await expect.poll(() => answered(shop.sent).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(await server.entriesFor(key)).toHaveLength(1);
    // Sent by the worker alone: the page's attempts, made offline, got no answer.
    expect(answered(shop.sent).map((request) => [request.sender, request.key, request.status])).toEqual([['worker', key, 201]]);
    // The example's onSettled hook: no tab of the shop was open, so the customer is notified.
    await expect.poll(() => workerNotifications(shop)).toEqual([['Payment confirmed', key]]);

    const before = shop.sent.length;
    const reopened = await shop.context.newPage();
    await reopened.goto(url);
    expect(await waitForStatus(reopened, 'paid')).toBe(key);
    expect(shop.sent.slice(before)).toEqual([]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it.each([
    ['the worker', 'a reopened page', 'worker'],
    ['a reopened page', 'the worker', 'page'],
  ] as const)('sends a payment resumed by %s and, while that request is in flight, by %s from the first one only, and charges once', async (_, __, first) => {
    const shop = await openShop(slowServer.origin);
    const url = orderUrl(slowServer.origin);
    // With the page first, no sync may fire by itself when the network is back: the worker is
    // then woken by `online`, once the page's request is in flight.
    const key = await payOfflineThenClose(shop, url, first === 'worker' ? 'with sync' : 'without sync');
    const online = Date.now();
    await shop.context.setOffline(false);
    const reopened = await shop.context.newPage();

    if (first === 'worker') {
      await shop.worker.dispatchSync();
      await inFlight(shop, 'worker', online);
      await reopened.goto(url);
      await waitForStatus(reopened, 'confirming');
      // The page resumed while the worker's request was still in the slow rail.
      expect(shop.sent.filter((sent) => sent.startedAt >= online).map((sent) => sent.endedAt)).toContain(Number.POSITIVE_INFINITY);
    } else {
      await reopened.goto(url);
      await inFlight(shop, 'page', online);
      await workerOnline(shop);
    }

    expect(await waitForStatus(reopened, 'paid', 45_000)).toBe(key);
    // Every request ends (the poll's default second was too short under CI load once); a second
    // request, however slow, is still caught by the assertion on what was sent after `online`.
    await expect.poll(() => shop.sent.every((sent) => sent.endedAt < Number.POSITIVE_INFINITY), { timeout: 15_000 }).toBe(true);
    expect(await slowServer.entriesFor(key)).toHaveLength(1);
    const afterOnline = shop.sent.filter((sent) => sent.startedAt >= online);
    expect(afterOnline.map((sent) => [sent.sender, sent.key, sent.status])).toEqual([[first, key, 201]]);
  });

  it('finishes the payment when the worker starts, where the browser has no Background Sync', async () => {
    const shop = await openShop(server.origin);
    const key = await payOfflineThenClose(shop, orderUrl(server.origin), 'without sync');
    await shop.context.setOffline(false);
    await shop.worker.stop();
    expect(await server.entriesFor(key)).toHaveLength(0);

    await shop.worker.start();

    await expect.poll(() => answered(shop.sent).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(answered(shop.sent).map((request) => [request.sender, request.key, request.status])).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("finishes the payment on the worker's online event, where the browser has no Background Sync", async () => {
    const shop = await openShop(server.origin);
    const key = await payOfflineThenClose(shop, orderUrl(server.origin), 'without sync');
    await shop.context.setOffline(false);
    expect(await server.entriesFor(key)).toHaveLength(0);

    await workerOnline(shop);

    await expect.poll(() => answered(shop.sent).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(answered(shop.sent).map((request) => [request.sender, request.key, request.status])).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("waits out a 503 with Retry-After during the worker's resume, retries with the same key and charges once", async () => {
    // The first call to the risk check is refused with 503 + Retry-After: 1 (nothing applied).
    const busyServer = await startServer(page.dir, 'unavailable:ext1:1:1');
    try {
      const shop = await openShop(busyServer.origin);
      const key = await payOfflineThenClose(shop, orderUrl(busyServer.origin));
      await shop.context.setOffline(false);
      await shop.worker.dispatchSync();

      await expect.poll(() => answered(shop.sent).map((request) => request.status), { timeout: 30_000 }).toEqual([503, 201]);
      const [refused, retried] = answered(shop.sent) as [SentPayment, SentPayment];
      expect([refused.sender, refused.key, retried.sender, retried.key]).toEqual(['worker', key, 'worker', key]);
      // Retry-After: 1 was waited for; without it the retry would follow within the 300 ms backoff.
      expect(retried.startedAt - refused.endedAt).toBeGreaterThanOrEqual(900);
      expect(await busyServer.entriesFor(key)).toHaveLength(1);
    } finally {
      await busyServer.stop();
    }
  });

  it('leaves resume on load as the way a payment finishes without a Service Worker, and charges once', async () => {
    const shop = await openShop(server.origin, { serviceWorkers: 'block' });
    const url = orderUrl(server.origin);
    const key = await payOfflineThenClose(shop, url, 'none');
    await shop.context.setOffline(false);

    const reopened = await shop.context.newPage();
    await reopened.goto(url);

    expect(await waitForStatus(reopened, 'paid')).toBe(key);
    expect(answered(shop.sent).map((request) => [request.sender, request.key, request.status])).toEqual([['page', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("shows an open page the payment paid once the worker has finished it, when the page's own requests get no answer", async () => {
    const shop = await openShop(server.origin);
    const tab = await shop.context.newPage();
    // This tab's requests fail as if its connection were down; the worker's are not routed here.
    await tab.route('**/v1/payments', (route) => route.abort('internetdisconnected'));
    await tab.goto(orderUrl(server.origin));
    const key = await waitForStatus(tab, 'pending');
    await shop.worker.activated();

    await tab.click('[data-action="pay"]');
    // Online, the browser may fire the sync the page registers at once; it is fired here anyway.
    await expect.poll(() => shop.sent.some((sent) => sent.sender === 'page' && sent.endedAt < Number.POSITIVE_INFINITY)).toBe(true);
    await shop.worker.dispatchSync();

    expect(await waitForStatus(tab, 'paid', 45_000)).toBe(key);
    expect(answered(shop.sent).map((request) => [request.sender, request.key, request.status])).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });
});

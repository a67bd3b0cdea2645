/**
 * The checkout's Service Worker in Debian's Chromium against a real `oncely serve`: a payment
 * whose Pay was pressed but never confirmed is finished after its tab is closed — by the
 * worker on Background Sync, on its start and on `online` — sent by one of page and worker at
 * a time, and charged once.
 */
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPage, launchChromium, orderUrl, startServer, waitForStatus, type CheckoutServer } from './harness.js';
import { recordingProxy, type RecordingProxy, type ServedPayment } from './recording-proxy.js';
import { controlWorker, recordSentPayments, type SentPayment, type WorkerControl } from './worker-control.js';

/** ext2 (the rail charge) takes this long on the slow server: page and worker overlap in it. */
const SLOW_RAIL_MS = 3_000;

let browser: Browser;
let page: { dir: string; remove(): Promise<void> };
let server: Recorded;
let slowServer: Recorded;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  page = await buildPage();
  server = await recorded(await startServer(page.dir));
  slowServer = await recorded(await startServer(page.dir, `slow:ext2:${SLOW_RAIL_MS}`));
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), slowServer?.stop()]);
  await page?.remove();
});

/** A checkout server behind a recording proxy: `origin` is the proxy's, the browser's way in. */
interface Recorded extends CheckoutServer {
  readonly proxy: RecordingProxy;
}

async function recorded(checkout: CheckoutServer): Promise<Recorded> {
  const proxy = await recordingProxy(checkout.origin);
  return {
    ...checkout,
    origin: proxy.origin,
    proxy,
    async stop() {
      await proxy.close();
      await checkout.stop();
    },
  };
}

interface Shop {
  readonly context: BrowserContext;
  /** The payment requests the browser saw fail or end (Playwright's events): the offline attempts. */
  readonly sent: SentPayment[];
  /** The payment requests of this test that reached the server, recorded on the wire. */
  served(): ServedPayment[];
  readonly worker: WorkerControl;
}

async function openShop(checkout: Recorded, options: BrowserContextOptions = {}): Promise<Shop> {
  const context = await browser.newContext(options);
  contexts.push(context);
  const from = checkout.proxy.payments.length;
  return {
    context,
    sent: recordSentPayments(context),
    served: () => checkout.proxy.payments.slice(from),
    worker: await controlWorker(browser, context, checkout.origin),
  };
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

/** Resolves once a request of `sender` that started after `since` is in flight at the server. */
function inFlight(shop: Shop, sender: ServedPayment['sender'], since: number): Promise<void> {
  return expect
    .poll(() => shop.served().some((sent) => sent.sender === sender && sent.startedAt >= since && sent.endedAt === Number.POSITIVE_INFINITY), {
      timeout: 30_000,
    })
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

/** The requests of `shop` the server answered. */
const answered = (shop: Shop): ServedPayment[] => shop.served().filter((request) => request.status !== undefined);
/** Requests as `[sender, key, status]`. */
const summary = (requests: readonly ServedPayment[]): unknown[] => requests.map((request) => [request.sender, request.key, request.status]);

describe('the checkout Service Worker', () => {
  it('finishes a payment whose Pay was pressed offline after the tab is closed, when the network is back and the sync fires, notifies, and the reopened page shows it paid without a request', async () => {
    const shop = await openShop(server);
    await shop.worker.allowNotifications();
    const url = orderUrl(server.origin);
    const key = await payOfflineThenClose(shop, url);
    expect(await server.entriesFor(key)).toHaveLength(0);

    await shop.context.setOffline(false);
    await shop.worker.dispatchSync();

    await expect.poll(() => answered(shop).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(await server.entriesFor(key)).toHaveLength(1);
    // Sent by the worker alone: the page's attempts, made offline, never reached the server.
    expect(summary(shop.served())).toEqual([['worker', key, 201]]);
    // The example's onSettled hook: no tab of the shop was open, so the customer is notified.
    // The hook runs after the outcome is written (read back, checked against its seal, written
    // whole): under load that is more than the default second after the server's answer.
    await expect.poll(() => workerNotifications(shop), { timeout: 15_000 }).toEqual([['Payment confirmed', key]]);

    const before = shop.served().length;
    const reopened = await shop.context.newPage();
    await reopened.goto(url);
    expect(await waitForStatus(reopened, 'paid')).toBe(key);
    expect(shop.served().slice(before)).toEqual([]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it.each([
    ['the worker', 'a reopened page', 'worker'],
    ['a reopened page', 'the worker', 'page'],
  ] as const)('sends a payment resumed by %s and, while that request is in flight, by %s from the first one only, and charges once', async (_, __, first) => {
    const shop = await openShop(slowServer);
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
      expect(
        shop
          .served()
          .filter((sent) => sent.startedAt >= online)
          .map((sent) => sent.endedAt),
      ).toContain(Number.POSITIVE_INFINITY);
    } else {
      await reopened.goto(url);
      await inFlight(shop, 'page', online);
      await workerOnline(shop);
    }

    expect(await waitForStatus(reopened, 'paid', 45_000)).toBe(key);
    // Every request that reached the server ends; a second one, however slow, is still caught by
    // the assertion on what reached it after `online` (its status is then `undefined`).
    await expect.poll(() => shop.served().every((sent) => sent.endedAt < Number.POSITIVE_INFINITY), { timeout: 15_000 }).toBe(true);
    expect(await slowServer.entriesFor(key)).toHaveLength(1);
    expect(summary(shop.served().filter((sent) => sent.startedAt >= online))).toEqual([[first, key, 201]]);
  });

  it('finishes the payment when the worker starts, where the browser has no Background Sync', async () => {
    const shop = await openShop(server);
    const key = await payOfflineThenClose(shop, orderUrl(server.origin), 'without sync');
    await shop.context.setOffline(false);
    await shop.worker.stop();
    expect(await server.entriesFor(key)).toHaveLength(0);

    await shop.worker.start();

    await expect.poll(() => answered(shop).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(summary(shop.served())).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("finishes the payment on the worker's online event, where the browser has no Background Sync", async () => {
    const shop = await openShop(server);
    const key = await payOfflineThenClose(shop, orderUrl(server.origin), 'without sync');
    await shop.context.setOffline(false);
    // Nothing reached the server before the event (who sent what, if something did).
    expect(summary(shop.served())).toEqual([]);
    expect(await server.entriesFor(key)).toHaveLength(0);

    await workerOnline(shop);

    await expect.poll(() => answered(shop).length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(summary(shop.served())).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("waits out a 503 with Retry-After during the worker's resume, retries with the same key and charges once", async () => {
    // The first call to the risk check is refused with 503 + Retry-After: 1 (nothing applied).
    const busyServer = await recorded(await startServer(page.dir, 'unavailable:ext1:1:1'));
    try {
      const shop = await openShop(busyServer);
      const key = await payOfflineThenClose(shop, orderUrl(busyServer.origin));
      await shop.context.setOffline(false);
      await shop.worker.dispatchSync();

      await expect.poll(() => shop.served().map((request) => request.status), { timeout: 30_000 }).toEqual([503, 201]);
      const [refused, retried] = shop.served() as [ServedPayment, ServedPayment];
      expect([refused.sender, refused.key, retried.sender, retried.key]).toEqual(['worker', key, 'worker', key]);
      // Retry-After: 1 was waited for; without it the retry would follow within the 300 ms backoff.
      expect(retried.startedAt - refused.endedAt).toBeGreaterThanOrEqual(900);
      expect(await busyServer.entriesFor(key)).toHaveLength(1);
    } finally {
      await busyServer.stop();
    }
  });

  it('leaves resume on load as the way a payment finishes without a Service Worker, and charges once', async () => {
    const shop = await openShop(server, { serviceWorkers: 'block' });
    const url = orderUrl(server.origin);
    const key = await payOfflineThenClose(shop, url, 'none');
    await shop.context.setOffline(false);

    const reopened = await shop.context.newPage();
    await reopened.goto(url);

    expect(await waitForStatus(reopened, 'paid')).toBe(key);
    expect(summary(shop.served())).toEqual([['page', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });

  it("shows an open page the payment paid once the worker has finished it, when the page's own requests get no answer", async () => {
    const shop = await openShop(server);
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
    expect(summary(shop.served())).toEqual([['worker', key, 201]]);
    expect(await server.entriesFor(key)).toHaveLength(1);
  });
});

/**
 * What the Service Worker end-to-end tests need beyond the page: every payment request of a
 * browser context with who sent it (a page or the worker), and the DevTools protocol controls
 * a test needs over the origin's Service Worker (fire a sync, stop and start the worker, refuse
 * Background Sync), driven through a blank tab that stays open while the checkout tab is closed.
 */
import type { Browser, BrowserContext, CDPSession } from 'playwright';

/** One `POST /v1/payments` the context made. */
export interface SentPayment {
  readonly sender: 'page' | 'worker';
  /** Its `Idempotency-Key`. */
  readonly key: string | undefined;
  readonly startedAt: number;
  /** `Infinity` while in flight. */
  endedAt: number;
  /** The response status, `undefined` when no answer arrived (offline). */
  status: number | undefined;
}

/** Records every payment request of `context`, pages' and the Service Worker's alike. */
export function recordSentPayments(context: BrowserContext): SentPayment[] {
  const sent: SentPayment[] = [];
  const open = new Map<object, SentPayment>();
  context.on('request', (request) => {
    if (request.method() !== 'POST' || new URL(request.url()).pathname !== '/v1/payments') return;
    const entry: SentPayment = {
      sender: request.serviceWorker() ? 'worker' : 'page',
      key: request.headers()['idempotency-key'],
      startedAt: Date.now(),
      endedAt: Number.POSITIVE_INFINITY,
      status: undefined,
    };
    open.set(request, entry);
    sent.push(entry);
  });
  context.on('response', (response) => {
    const entry = open.get(response.request());
    if (entry) entry.status = response.status();
  });
  const finish = (request: object): void => {
    const entry = open.get(request);
    if (!entry) return;
    entry.endedAt = Date.now();
    open.delete(request);
  };
  context.on('requestfinished', finish);
  context.on('requestfailed', finish);
  return sent;
}

/** DevTools control over the one Service Worker registration of an origin. */
export interface WorkerControl {
  /** Waits until the origin's worker is activated. */
  activated(): Promise<void>;
  /** Fires Background Sync's `sync` event with `tag` at the worker (`ServiceWorker.dispatchSyncEvent`). */
  dispatchSync(tag?: string): Promise<void>;
  /** Stops the worker and waits until it is stopped. */
  stop(): Promise<void>;
  /** Starts the stopped worker (its script runs again from the top). */
  start(): Promise<void>;
  /** Makes `registration.sync.register()` reject, as in a browser without Background Sync. */
  refuseBackgroundSync(): Promise<void>;
  /**
   * Lets the origin show notifications, leaving every other permission as it is (Playwright's
   * `grantPermissions` refuses all the others, Background Sync included).
   */
  allowNotifications(): Promise<void>;
}

interface Version {
  readonly registrationId: string;
  readonly runningStatus: string;
  readonly status: string;
}

/**
 * Opens a blank tab in `context` to speak the DevTools protocol through (the ServiceWorker domain
 * lives on page targets, and the checkout tab is closed mid-test).
 */
export async function controlWorker(browser: Browser, context: BrowserContext, origin: string): Promise<WorkerControl> {
  const devtools = await context.newPage();
  const session: CDPSession = await context.newCDPSession(devtools);
  let versions: Version[] = [];
  let registrationId: string | undefined;
  const changed = new Set<() => void>();
  const notify = (): void => {
    for (const check of changed) check();
  };
  session.on('ServiceWorker.workerRegistrationUpdated', (event) => {
    const mine = event.registrations.find((registration) => new URL(registration.scopeURL).origin === origin && !registration.isDeleted);
    if (mine) registrationId = mine.registrationId;
    notify();
  });
  session.on('ServiceWorker.workerVersionUpdated', (event) => {
    versions = event.versions.map(({ registrationId: id, runningStatus, status }) => ({ registrationId: id, runningStatus, status }));
    notify();
  });
  await session.send('ServiceWorker.enable');

  const until = (check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const test = (): void => {
        if (!check()) return;
        clearTimeout(timer);
        changed.delete(test);
        resolve();
      };
      const timer = setTimeout(() => {
        changed.delete(test);
        reject(new Error(`the Service Worker of ${origin} never got ${what}: ${JSON.stringify(versions)}`));
      }, timeoutMs);
      changed.add(test);
      test();
    });
  let browserSession: CDPSession | undefined;
  const setPermission = async (name: string, setting: 'granted' | 'denied'): Promise<void> => {
    const { targetInfo } = await session.send('Target.getTargetInfo');
    // Never detached: Chromium drops a session's permission overrides when it detaches.
    browserSession ??= await browser.newBrowserCDPSession();
    await browserSession.send('Browser.setPermission', {
      permission: { name },
      setting,
      origin,
      ...(targetInfo.browserContextId === undefined ? {} : { browserContextId: targetInfo.browserContextId }),
    });
  };
  const mine = (): Version | undefined => versions.find((version) => version.registrationId === registrationId && version.status === 'activated');

  return {
    activated: () => until(() => mine() !== undefined, 'activated'),
    async dispatchSync(tag = 'oncely') {
      if (registrationId === undefined) throw new Error(`no Service Worker registration for ${origin}`);
      await session.send('ServiceWorker.dispatchSyncEvent', { origin, registrationId, tag, lastChance: false });
    },
    async stop() {
      await session.send('ServiceWorker.stopAllWorkers');
      await until(() => mine()?.runningStatus === 'stopped', 'stopped');
    },
    async start() {
      await session.send('ServiceWorker.startWorker', { scopeURL: `${origin}/` });
      await until(() => mine()?.runningStatus === 'running', 'running');
    },
    refuseBackgroundSync: () => setPermission('background-sync', 'denied'),
    allowNotifications: () => setPermission('notifications', 'granted'),
  };
}

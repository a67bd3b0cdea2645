/**
 * The page's half: asking the browser to wake the app's Service Worker once the network is back
 * (Background Sync), so that an operation whose attempt got no answer is finished even if the
 * tab is closed by then.
 *
 * @module
 */

/**
 * The Background Sync tag oncely registers and its Service Worker listens for, unless told
 * otherwise (`tag` of {@link requestBackgroundSync}, `syncTag` of `createServiceWorkerResumer`).
 *
 * @example
 * ```ts
 * await requestBackgroundSync({ tag: DEFAULT_SYNC_TAG });
 * ```
 */
export const DEFAULT_SYNC_TAG = 'oncely';

/**
 * Options of {@link requestBackgroundSync}.
 *
 * @example
 * ```ts
 * const options: BackgroundSyncOptions = { tag: 'checkout' };
 * ```
 */
export interface BackgroundSyncOptions {
  /**
   * The sync tag; the worker's `syncTag` must be the same.
   * @default DEFAULT_SYNC_TAG ('oncely')
   */
  readonly tag?: string;
}

/** The part of `ServiceWorkerRegistration.sync` (not in TypeScript's DOM types) this file uses. */
interface SyncManagerLike {
  register(tag: string): Promise<void>;
}

/**
 * Registers a background sync with the page's Service Worker registration. Resolves to `true`
 * when the browser took it, `false` where it cannot: no Service Worker registered for this page,
 * no Background Sync (Firefox, Safari), or the permission refused. It never rejects, so it can
 * be called from a client hook; where it resolves `false`, the operation stays pending in the
 * journal and is finished by the next page load (`client.resume()`), as without a worker.
 *
 * Registering a tag that is already registered is a no-op in the browser, so calling this on
 * every unanswered attempt costs nothing.
 *
 * @example
 * ```ts
 * import { createClient } from 'oncely/browser';
 * import { requestBackgroundSync } from 'oncely/service-worker';
 *
 * const client = createClient({ baseUrl: '/api', onUnanswered: () => void requestBackgroundSync() });
 * ```
 */
export async function requestBackgroundSync(options: BackgroundSyncOptions = {}): Promise<boolean> {
  const container = globalThis.navigator?.serviceWorker;
  if (container === undefined) return false;
  try {
    // getRegistration() resolves at once (to undefined without a worker), where `ready` would
    // wait forever; sync.register() needs an active worker, which `ready` waits for.
    const registration = await container.getRegistration();
    if (registration === undefined) return false;
    const sync = (registration as ServiceWorkerRegistration & { readonly sync?: SyncManagerLike }).sync;
    if (sync === undefined) return false;
    if (registration.active === null) await container.ready;
    await sync.register(options.tag ?? DEFAULT_SYNC_TAG);
    return true;
  } catch {
    // NotAllowedError (permission refused), InvalidStateError (worker gone): resume on load remains.
    return false;
  }
}

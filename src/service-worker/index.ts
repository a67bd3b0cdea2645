/**
 * `oncely/service-worker`: finishing submitted operations after their tab is gone.
 *
 * In the app's Service Worker, {@link createServiceWorkerResumer} resumes the submitted
 * operations of its scope from the IndexedDB journal the page writes, on Background Sync, on the
 * worker's start and on `online`. In the page, {@link requestBackgroundSync} (wired to the
 * client's `onUnanswered` hook) asks the browser to wake the worker once the network is back.
 * Page and worker claim each operation through the same Web Lock, so no operation is sent by
 * both; credentials are never journaled, the worker gets its own (`credentials`, `headers`).
 * Where there is no Service Worker or no Background Sync, the page's resume on load remains.
 *
 * Nothing here imports Node-only code: the entry bundles for a worker as it does for a page.
 *
 * @module
 */
export { DEFAULT_SYNC_TAG, requestBackgroundSync, type BackgroundSyncOptions } from './background-sync.js';
export { DEFAULT_CHANNEL, ResumeTrigger, type ServiceWorkerSettled } from './messages.js';
export {
  createServiceWorkerResumer,
  type ResumeReport,
  type ServiceWorkerResumer,
  type ServiceWorkerResumerOptions,
  type WorkerEvents,
} from './worker-resumer.js';

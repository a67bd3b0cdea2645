/**
 * The checkout's Service Worker (built to `sw.js`, registered by the page): it finishes a
 * payment whose Pay was pressed but never confirmed after the tab is gone — on Background Sync
 * (the page registers one when an attempt gets no answer), when the worker starts, and on
 * `online`. It reads the same IndexedDB journal as the page and claims each payment through the
 * same Web Lock, so a payment is never sent by the page and the worker at once.
 *
 * Open tabs hear the outcome on the checkout channel and show it; with no tab open and
 * notifications allowed, the customer gets a notification instead (the page never asks for the
 * permission itself: that is the shop's call).
 */
import { createServiceWorkerResumer, type ServiceWorkerSettled } from 'oncely/service-worker';
import { CHANNEL_NAME, demoHeaders } from './config.js';

/** The parts of the Service Worker's global scope this file uses (not in TypeScript's DOM types). */
interface CheckoutWorkerScope {
  readonly registration: ServiceWorkerRegistration;
  readonly clients: { matchAll(options: { type: 'window' }): Promise<readonly unknown[]> };
}
const scope = globalThis as unknown as CheckoutWorkerScope;

async function notify(message: ServiceWorkerSettled): Promise<void> {
  if (Notification.permission !== 'granted' || (await scope.clients.matchAll({ type: 'window' })).length > 0) return;
  const paid = message.state === 'succeeded';
  await scope.registration.showNotification(paid ? 'Payment confirmed' : 'Payment declined', {
    body: paid ? 'Your order is paid. You were charged once.' : `The payment service answered ${message.status}.`,
    tag: message.key,
  });
}

createServiceWorkerResumer({
  baseUrl: location.origin,
  headers: demoHeaders,
  channel: CHANNEL_NAME,
  onSettled: notify,
});

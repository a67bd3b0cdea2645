/**
 * The checkout page: renders the order, journals its payment (the key is fixed from that
 * moment), pays it once however often Pay is pressed, and on load finishes whatever an
 * earlier page load left unconfirmed. It registers the Service Worker (`sw.js`) that finishes a
 * payment after its tab is closed, and asks it for a background sync whenever an attempt gets
 * no answer.
 *
 * In an application this module imports `oncely/browser` and `oncely/service-worker`; the
 * example imports the same files from the repository's sources so it always runs against the
 * code under test.
 */
import { createClient, type Operation } from '../../../src/browser.js';
import { requestBackgroundSync } from '../../../src/service-worker/index.js';
import { demoHeaders } from './config.js';
import { orderFromUrl, paymentBody, urlForOrder } from './order.js';
import { confirmPayment, onSubmittedElsewhere, retryMessage, type Report } from './payment.js';
import { resumeOtherPayments } from './others.js';
import { CheckoutStatus, createCheckoutView } from './view.js';

// Where Service Workers exist (secure contexts: https, or http://localhost / 127.0.0.1). Without
// one, or without Background Sync, the page's resume on load below is the way payments finish.
navigator.serviceWorker?.register('./sw.js').catch(() => undefined);

const root = document.querySelector<HTMLElement>('main.checkout');
if (!root) throw new Error('checkout page: missing <main class="checkout">');
const view = createCheckoutView(root);

const order = orderFromUrl(new URL(location.href));
// Written back so that a reload reopens this order, and so derives the same key.
history.replaceState(null, '', urlForOrder(new URL(location.href), order));
view.showOrder(order);

// No `journal` option: oncely/browser's default is the IndexedDB journal, shared by the tabs.
const client = createClient({
  baseUrl: location.origin,
  headers: demoHeaders,
  // confirmPayment() sends again after each unsettled send(), so one send() is kept short: the
  // client's default (a minute) would hold the payment's claim, which the Service Worker then
  // waits for, as long while this tab's requests get no answer.
  retry: { budgetMs: 10_000 },
  // No answer (offline, a dropped connection): the worker is woken once the network is back,
  // and finishes the payment even if this tab is closed by then.
  onUnanswered: () => void requestBackgroundSync(),
  onRetry: ({ key, status, error }) => {
    if (key === root.dataset.key) view.showStatus(CheckoutStatus.Confirming, retryMessage(status, error !== undefined));
  },
});

const report: Report = (status, message, paymentId) => {
  view.showStatus(status, message);
  if (paymentId !== undefined) view.showReceipt(paymentId);
};

async function start(): Promise<void> {
  // The key is derived from the order reference, so every render of this order (a reload, a
  // second tab, even another browser) names the same payment, and the server pays it once.
  let operation: Operation;
  try {
    operation = await client.prepare('POST', '/v1/payments', { json: paymentBody(order), naturalKey: ['checkout', order.reference] });
  } catch (error) {
    view.showStatus(CheckoutStatus.Unresolved, `This order cannot be paid here: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  view.showKey(operation.key);

  let confirming = false;
  const confirm = (): void => {
    // Pay, a reload and another tab's news may all ask; the payment is confirmed once per page.
    if (confirming) return;
    confirming = true;
    void confirmPayment(operation, report);
  };
  // Pay pressed in another tab showing this order: follow it here too. Both tabs then send the
  // same operation, and the journal's claim lets only one of them have it in flight. Listening
  // starts before the journal is read, so a Pay pressed in between is not missed.
  onSubmittedElsewhere(operation.key, confirm);

  const record = await client.journal.get(client.scope, operation.key);
  if (record !== undefined && (record.state !== 'pending' || record.submittedAt !== null)) {
    // Paid or declined before (send() answers from the journal without a request), or Pay was
    // pressed before this page load (send() journaled submittedAt): carry on with the same key.
    confirm();
  } else if (!confirming) {
    view.showStatus(CheckoutStatus.Pending, 'Review your order, then press Pay.');
  }
  view.onPay(confirm);

  await resumeOtherPayments(client, operation.key, view.showOthers);
}

void start();

/**
 * Paying one order with oncely: the page's side of the operation's lifecycle.
 *
 * ```
 * render ─► prepare (key derived from the order, journaled, submittedAt: null) ─► pending ──Pay──► confirming
 * confirming ─► send() (journals submittedAt, posts `submitted`) ─► 2xx ─► paid (posts `settled`)
 *                    ├──► 402 / final 4xx ─► declined (posts `settled`)
 *                    ├──► no answer to an attempt ─► background sync registered (the worker takes over if the tab closes)
 *                    └──► still unknown (offline, 409, 202, 5xx) ─► wait for the network or `settled` ─► send() again
 * reload / tab opened later ─► prepare returns the same record ─► submittedAt set? ─► confirming ─► send() …
 * tab already open ─► `submitted` or `settled` for its key on the channel ─► confirming ─► send() …
 * ```
 *
 * Whether the customer pressed Pay is the journal's `submittedAt`: `prepare()` journals the
 * operation with `submittedAt: null` when the order renders, and `send()` stamps it, durably,
 * before the first attempt. The IndexedDB journal is shared by every tab of the origin, so a
 * reload (or a tab opened later) carries on with a payment whose Pay was pressed instead of
 * waiting for another click, and a later page load never charges an order that was only viewed.
 *
 * The journal cannot tell tabs that are already open (IndexedDB has no change events), so a tab
 * posts `{ type: 'submitted', key }` on the `oncely-checkout` BroadcastChannel right after it
 * calls `send()`, and `{ type: 'settled', key }` once the journal holds the outcome; a tab showing
 * that order sends it too, and the journal's claim lets one tab at a time have it in flight.
 * `send()` stamps `submittedAt` a moment after it is called, so a tab that loads in that moment
 * can both miss `submitted` and read `submittedAt: null`; `settled` still brings it along, and
 * its `send()` then answers from the journal without a request. The Service Worker posts
 * `settled` on the same channel when it finishes a payment, so a tab waiting for the network
 * shows the outcome at once.
 */
import { ErrorCode, isOncelyError, type Operation, type OperationResult } from '../../../src/browser.js';
import { CHANNEL_NAME } from './config.js';
import { CheckoutStatus } from './view.js';

/** What the reference server answers `201` with. */
export interface Payment {
  readonly id: string;
  readonly status: string;
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

/** What the page shows while and after paying; `paymentId` comes with `paid`. */
export type Report = (status: CheckoutStatus, message: string, paymentId?: string) => void;

/** What a tab posts on the channel after it called `send()` for `key`, or once that settled. */
interface PaymentMessage {
  readonly type: 'submitted' | 'settled';
  readonly key: string;
}

let channel: BroadcastChannel | undefined;

// One channel per page: a BroadcastChannel never delivers a message to the object that posted
// it, so a tab does not hear its own announcements (it is already confirming that payment).
function paymentChannel(): BroadcastChannel {
  channel ??= new BroadcastChannel(CHANNEL_NAME);
  return channel;
}

function announce(type: PaymentMessage['type'], key: string): void {
  paymentChannel().postMessage({ type, key } satisfies PaymentMessage);
}

function isPaymentMessage(data: unknown): data is PaymentMessage {
  return (
    typeof data === 'object' &&
    data !== null &&
    'type' in data &&
    (data.type === 'submitted' || data.type === 'settled') &&
    'key' in data &&
    typeof data.key === 'string'
  );
}

/**
 * Calls `handler` when another tab of this origin sends the payment for `key` (Pay pressed
 * there, or a payment it carries on with) or sees it settled. Subscribe before reading the
 * journal: a Pay pressed in between is then heard rather than missed.
 *
 * @example
 * ```ts
 * onSubmittedElsewhere(operation.key, () => void confirmPayment(operation, report));
 * ```
 */
export function onSubmittedElsewhere(key: string, handler: () => void): void {
  paymentChannel().addEventListener('message', (event: MessageEvent<unknown>) => {
    if (isPaymentMessage(event.data) && event.data.key === key) handler();
  });
}

/**
 * Resolves when the browser reports it is back online, when another tab or the Service Worker
 * reports `key` settled, or after `ms` (the report can lag).
 */
function waitForNetwork(ms: number, key: string): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (event: MessageEvent<unknown>): void => {
      if (isPaymentMessage(event.data) && event.data.type === 'settled' && event.data.key === key) done();
    };
    const done = (): void => {
      clearTimeout(timer);
      window.removeEventListener('online', done);
      paymentChannel().removeEventListener('message', onMessage);
      resolve();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener('online', done);
    paymentChannel().addEventListener('message', onMessage);
  });
}

function problemDetail(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'detail' in parsed && typeof parsed.detail === 'string') return parsed.detail;
  } catch {
    // Not problem+json: the status line is all there is to show.
  }
  return undefined;
}

/**
 * The message for an attempt that is about to be retried (wired to the client's `onRetry`):
 * `status` is the answer that is retried; without one, either the network failed or another
 * tab holds the operation's claim.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, onRetry: ({ status, error }) => show(retryMessage(status, error !== undefined)) });
 * ```
 */
export function retryMessage(status: number | undefined, networkFailed: boolean): string {
  if (status === undefined && !networkFailed) return 'Another tab is confirming this payment…';
  if (status === undefined) {
    return navigator.onLine
      ? 'The connection dropped; trying again with the same payment…'
      : 'You are offline. The payment will go through once you are back — you will not be charged twice.';
  }
  return status === 409 || status === 202 ? 'Your bank is still processing the payment…' : 'The payment service is busy; trying again…';
}

/**
 * Sends `operation` until it settles and reports each state. Unknown outcomes are never shown
 * as failures: the operation stays pending in the journal and is sent again (same key, same
 * bytes) when the network is back, so the customer is charged at most once.
 *
 * @example
 * ```ts
 * payButton.onclick = () => void confirmPayment(operation, (status, message) => view.showStatus(status, message));
 * ```
 */
export async function confirmPayment(operation: Operation, report: Report): Promise<void> {
  report(CheckoutStatus.Confirming, navigator.onLine ? 'Confirming your payment…' : retryMessage(undefined, true));
  let sending = operation.send<Payment>();
  announce('submitted', operation.key);
  for (;;) {
    let result: OperationResult<Payment>;
    try {
      result = await sending;
    } catch (error) {
      if (isOncelyError(error, ErrorCode.OperationPending) || isOncelyError(error, ErrorCode.Aborted)) {
        const lastStatus = isOncelyError(error, ErrorCode.OperationPending) ? error.lastStatus : undefined;
        report(CheckoutStatus.Confirming, retryMessage(lastStatus, true));
        await waitForNetwork(2_000, operation.key);
        sending = operation.send<Payment>();
        continue;
      }
      if (isOncelyError(error, ErrorCode.Http)) {
        // A 401 or 403 leaves the operation pending: those credentials were refused, nothing settled.
        if (error.status !== 401 && error.status !== 403) announce('settled', operation.key);
        const detail = problemDetail(error.body) ?? `The payment service answered ${error.status}.`;
        report(CheckoutStatus.Declined, error.status === 402 ? `Your payment was declined. ${detail}` : detail);
        return;
      }
      report(CheckoutStatus.Unresolved, `We could not confirm this payment (${error instanceof Error ? error.message : String(error)}).`);
      return;
    }
    announce('settled', operation.key);
    report(CheckoutStatus.Paid, result.replayed ? 'Already paid — thank you!' : 'Payment confirmed — thank you!', result.data.id);
    return;
  }
}

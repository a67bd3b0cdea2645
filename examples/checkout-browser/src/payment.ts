/**
 * Paying one order with oncely: the page's side of the operation's lifecycle.
 *
 * ```
 * render ─► prepare (key derived from the order, journaled) ─► pending ──Pay──► confirming
 * confirming ─► send() ─► 2xx ─► paid
 *                    ├──► 402 / final 4xx ─► declined
 *                    └──► still unknown (offline, 409, 202, 5xx) ─► wait for the network ─► send() again
 * reload / another tab ─► prepare returns the same record ─► submitted? ─► confirming ─► send() …
 * ```
 *
 * A prepared operation is journaled as `pending` before Pay is ever pressed, and the journal
 * only counts an attempt once its answer is back, so neither says whether the customer
 * pressed Pay. A marker in localStorage does: written before the first `send()`, shared by
 * the origin's tabs, it is what makes a reload (or a second tab) carry on with the payment
 * instead of waiting for another click, and what keeps an order the customer only looked at
 * from being charged by a later page load.
 */
import { ErrorCode, isOncelyError, type Operation, type OperationResult } from '../../../src/browser.js';
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

const MARKER = 'oncely-checkout:submitted:';

/**
 * Whether Pay was pressed for this key, in this tab, another tab, or before a reload.
 *
 * @example
 * ```ts
 * if (wasSubmitted(operation.key)) void confirmPayment(operation, report);
 * ```
 */
export function wasSubmitted(key: string): boolean {
  return localStorage.getItem(MARKER + key) !== null;
}

/**
 * Calls `handler` when another tab of this origin presses Pay for `key` (the `storage` event
 * fires in every tab but the one that wrote the marker).
 *
 * @example
 * ```ts
 * onSubmittedElsewhere(operation.key, () => void confirmPayment(operation, report));
 * ```
 */
export function onSubmittedElsewhere(key: string, handler: () => void): void {
  window.addEventListener('storage', (event) => {
    if (event.key === MARKER + key && event.newValue !== null) handler();
  });
}

function markSubmitted(key: string): void {
  localStorage.setItem(MARKER + key, String(Date.now()));
}

function clearSubmitted(key: string): void {
  localStorage.removeItem(MARKER + key);
}

/** Resolves when the browser reports it is back online, or after `ms` (the report can lag). */
function waitForNetwork(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      window.removeEventListener('online', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener('online', done);
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
  markSubmitted(operation.key);
  report(CheckoutStatus.Confirming, navigator.onLine ? 'Confirming your payment…' : retryMessage(undefined, true));
  for (;;) {
    let result: OperationResult<Payment>;
    try {
      result = await operation.send<Payment>();
    } catch (error) {
      if (isOncelyError(error, ErrorCode.OperationPending) || isOncelyError(error, ErrorCode.Aborted)) {
        const lastStatus = isOncelyError(error, ErrorCode.OperationPending) ? error.lastStatus : undefined;
        report(CheckoutStatus.Confirming, retryMessage(lastStatus, true));
        await waitForNetwork(2_000);
        continue;
      }
      clearSubmitted(operation.key);
      if (isOncelyError(error, ErrorCode.Http)) {
        const detail = problemDetail(error.body) ?? `The payment service answered ${error.status}.`;
        report(CheckoutStatus.Declined, error.status === 402 ? `Your payment was declined. ${detail}` : detail);
        return;
      }
      report(CheckoutStatus.Unresolved, `We could not confirm this payment (${error instanceof Error ? error.message : String(error)}).`);
      return;
    }
    clearSubmitted(operation.key);
    report(CheckoutStatus.Paid, result.replayed ? 'Already paid — thank you!' : 'Payment confirmed — thank you!', result.data.id);
    return;
  }
}

/**
 * What the page shows for each state of the payment: `<main data-status>` (read by the CSS and
 * the end-to-end tests), a badge and a sentence. One pure function, so the words the customer
 * reads are decided in one place.
 */
import { ErrorCode, isOncelyError } from 'oncely/browser';
import type { OperationView } from 'oncely/react';

/**
 * The page's states, as `<main data-status>`.
 *
 * @example
 * ```ts
 * describeStatus({ state: 'prepared' }).status; // 'pending'
 * ```
 */
export const CheckoutStatus = {
  /** Reading the journal; nothing can be paid yet. */
  Loading: 'loading',
  /** The order is ready and its key journaled; waiting for Pay. */
  Pending: 'pending',
  /** Pay was pressed (here, in another tab, or before a reload); the outcome is not known yet. */
  Confirming: 'confirming',
  /** The server refused the credentials (401/403): nothing was charged, the payment is still pending. */
  SignedOut: 'signed-out',
  /** The server confirmed the payment. */
  Paid: 'paid',
  /** The server refused the payment for good (e.g. `402`). */
  Declined: 'declined',
  /** Neither paid nor declined, and not resendable (older than the key retention, no journal): ask support. */
  Unresolved: 'unresolved',
} as const;

/** One of {@link CheckoutStatus}'s values. */
export type CheckoutStatus = (typeof CheckoutStatus)[keyof typeof CheckoutStatus];

/** What the page shows for one state. */
export interface StatusText {
  readonly status: CheckoutStatus;
  readonly badge: string;
  readonly message: string;
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

const time = (at: number): string => new Date(at).toLocaleTimeString();
const OFFLINE = 'Payment pending: you are offline. It will go through once you are back — you will not be charged twice.';

/**
 * The badge and sentence for a payment's state. `online` is `navigator.onLine` (passed in, so
 * the function stays pure).
 *
 * @example
 * ```ts
 * describeStatus({ state: 'waiting', retryAt: Date.now() + 2000, status: 503 }, true).message;
 * ```
 */
export function describeStatus(view: OperationView, online: boolean): StatusText {
  const confirming = (message: string, badge = 'Confirming'): StatusText => ({ status: CheckoutStatus.Confirming, badge, message });
  switch (view.state) {
    case 'loading':
      return { status: CheckoutStatus.Loading, badge: 'Loading', message: 'Preparing your order…' };
    case 'prepared':
      return { status: CheckoutStatus.Pending, badge: 'Ready', message: 'Review your order, then press Pay.' };
    case 'sending':
      return confirming(view.elsewhere ? 'Another tab is confirming this payment…' : 'Confirming your payment…');
    case 'waiting':
      return confirming(
        view.status === 409 || view.status === 202
          ? `Your bank is still processing the payment; checking again at ${time(view.retryAt)}…`
          : `The payment service is busy (${view.status}); trying again at ${time(view.retryAt)}…`,
      );
    case 'pending': {
      if (isOncelyError(view.error, ErrorCode.Http)) {
        return {
          status: CheckoutStatus.SignedOut,
          badge: 'Not signed in',
          message: 'You are not signed in: the payment is still pending and nothing was charged. Sign in, then press Pay to finish it.',
        };
      }
      if (!online) return confirming(OFFLINE, 'Payment pending');
      return confirming(
        view.retryAt === null
          ? 'Payment pending: no answer yet. It is sent again with the same key — you will not be charged twice.'
          : 'The connection dropped; trying again with the same payment…',
        'Payment pending',
      );
    }
    case 'succeeded':
      return { status: CheckoutStatus.Paid, badge: 'Paid', message: view.result.replayed ? 'Already paid — thank you!' : 'Payment confirmed — thank you!' };
    case 'failed': {
      const detail = isOncelyError(view.error, ErrorCode.Http)
        ? (problemDetail(view.error.body) ?? `The payment service answered ${view.error.status}.`)
        : view.error.message;
      const declined = isOncelyError(view.error, ErrorCode.Http) && view.error.status === 402;
      return { status: CheckoutStatus.Declined, badge: 'Declined', message: declined ? `Your payment was declined. ${detail}` : detail };
    }
    case 'expired':
      return {
        status: CheckoutStatus.Unresolved,
        badge: 'Needs attention',
        message: 'This payment is too old to be sent again; contact support with its key.',
      };
    case 'unavailable':
      return {
        status: CheckoutStatus.Unresolved,
        badge: 'Needs attention',
        message: `This order cannot be paid here: ${view.error instanceof Error ? view.error.message : String(view.error)}`,
      };
  }
}

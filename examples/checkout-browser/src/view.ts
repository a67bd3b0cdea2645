/**
 * The checkout page's DOM: one function per thing the page can show. The page's state lives
 * in `data-status` on `<main>` (styled by CSS, read by the end-to-end tests), so the view
 * never keeps state of its own.
 */
import { formatAmount, type Order } from './order.js';

/**
 * What the page shows about the payment; also `<main data-status>`, which the CSS and the tests read.
 *
 * @example
 * ```ts
 * view.showStatus(CheckoutStatus.Paid, 'Payment confirmed — thank you!');
 * ```
 */
export const CheckoutStatus = {
  /** Reading the journal; nothing can be paid yet. */
  Loading: 'loading',
  /** The order is ready and its key journaled; waiting for Pay. */
  Pending: 'pending',
  /** Pay was pressed (in this tab, another tab or before a reload); the outcome is not known yet. */
  Confirming: 'confirming',
  /** The server confirmed the payment. */
  Paid: 'paid',
  /** The server refused the payment for good (e.g. `402`). */
  Declined: 'declined',
  /** Neither paid nor declined, and not resendable (e.g. older than the key retention): ask support. */
  Unresolved: 'unresolved',
} as const;

/** One of {@link CheckoutStatus}'s values. */
export type CheckoutStatus = (typeof CheckoutStatus)[keyof typeof CheckoutStatus];

const BADGES: Record<CheckoutStatus, string> = {
  loading: 'Loading',
  pending: 'Pending',
  confirming: 'Confirming',
  paid: 'Paid',
  declined: 'Declined',
  unresolved: 'Needs attention',
};

/** A payment made earlier from this browser for another order, as listed under the form. */
export interface OtherPayment {
  readonly key: string;
  readonly label: string;
  readonly status: CheckoutStatus;
}

/** The page's DOM, bound once to `<main>`. */
export interface CheckoutView {
  showOrder(order: Order): void;
  showKey(key: string): void;
  showReceipt(paymentId: string): void;
  showStatus(status: CheckoutStatus, message: string): void;
  showOthers(others: readonly OtherPayment[]): void;
  onPay(handler: () => void): void;
}

function field(root: HTMLElement, name: string): HTMLElement {
  const element = root.querySelector<HTMLElement>(`[data-field="${name}"]`);
  if (!element) throw new Error(`checkout page: missing [data-field="${name}"]`);
  return element;
}

/**
 * Binds the view to the page's `<main>`.
 *
 * @example
 * ```ts
 * const view = createCheckoutView(document.querySelector('main.checkout')!);
 * view.showOrder(order);
 * ```
 */
export function createCheckoutView(root: HTMLElement): CheckoutView {
  const pay = root.querySelector<HTMLButtonElement>('[data-action="pay"]');
  const others = root.querySelector<HTMLElement>('.others');
  if (!pay || !others) throw new Error('checkout page: missing the Pay button or the earlier-payments list');
  let amountText = '';

  return {
    showOrder(order) {
      amountText = formatAmount(order.amount, order.currency);
      field(root, 'reference').textContent = order.reference;
      field(root, 'item').textContent = order.item;
      field(root, 'amount').textContent = amountText;
      field(root, 'currency').textContent = order.currency;
    },
    showKey(key) {
      root.dataset.key = key;
      field(root, 'key').textContent = key;
    },
    showReceipt(paymentId) {
      field(root, 'receipt').textContent = paymentId;
      field(root, 'receipt-line').hidden = false;
    },
    showStatus(status, message) {
      root.dataset.status = status;
      field(root, 'badge').textContent = BADGES[status];
      field(root, 'message').textContent = message;
      // Disabled for every state but pending: a second press is harmless (the operation is
      // sent once whatever happens) but should not look like it starts another payment.
      pay.disabled = status !== CheckoutStatus.Pending;
      pay.textContent =
        status === CheckoutStatus.Paid ? 'Paid' : status === CheckoutStatus.Confirming ? 'Confirming…' : `Pay ${amountText}`;
    },
    showOthers(list) {
      others.hidden = list.length === 0;
      field(root, 'others').replaceChildren(
        ...list.map((other) => {
          const item = document.createElement('li');
          item.dataset.key = other.key;
          item.dataset.status = other.status;
          const label = document.createElement('span');
          label.textContent = other.label;
          const badge = document.createElement('strong');
          badge.textContent = BADGES[other.status];
          item.append(label, badge);
          return item;
        }),
      );
    },
    onPay(handler) {
      pay.addEventListener('click', handler);
    },
  };
}

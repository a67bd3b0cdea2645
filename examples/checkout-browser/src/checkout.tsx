/**
 * The checkout card: the order, its payment's state, Pay, and the payments this browser left
 * unconfirmed for other orders.
 *
 * The key is derived from the order reference (`naturalKey`), so every render of this order — a
 * StrictMode double effect, a remount, a reload, a second tab — names the same payment, and the
 * server pays it once. `useOperation` does the rest: a double click sends once, a reload carries
 * on with a payment whose Pay was pressed, another tab's or the Service Worker's outcome shows
 * here from the shared journal.
 */
import { useEffect, useState } from 'react';
import { useOperation } from 'oncely/react';
import { EarlierPayments } from './earlier-payments.js';
import { formatAmount, paymentBody, type Order } from './order.js';
import { CheckoutStatus, describeStatus } from './status.js';

/** What the reference server answers `201` with. */
interface Payment {
  readonly id: string;
}

/** `navigator.onLine`, re-rendered on `online` / `offline`. */
function useOnline(): boolean {
  const [online, setOnline] = useState(() => typeof navigator === 'undefined' || navigator.onLine);
  useEffect(() => {
    const update = (): void => setOnline(navigator.onLine);
    window.addEventListener('online', update);
    window.addEventListener('offline', update);
    return () => {
      window.removeEventListener('online', update);
      window.removeEventListener('offline', update);
    };
  }, []);
  return online;
}

/**
 * The checkout for one order.
 *
 * @example
 * ```tsx
 * <Checkout order={{ reference: 'ord-42', amount: 4900, currency: 'EUR', item: 'Annual plan' }} />
 * ```
 */
export function Checkout({ order }: { readonly order: Order }) {
  const { state, send, key } = useOperation({ path: '/v1/payments', json: paymentBody(order), naturalKey: ['checkout', order.reference] });
  const shown = describeStatus(state, useOnline());
  const amount = formatAmount(order.amount, order.currency);
  // Pay is offered before the first send, and again after a 401 (signed in again): a second
  // press is harmless either way, but should not look like it starts another payment.
  const canPay = shown.status === CheckoutStatus.Pending || shown.status === CheckoutStatus.SignedOut;
  const paymentId = state.state === 'succeeded' ? (state.result.data as Payment).id : undefined;

  return (
    <main className="checkout" data-status={shown.status} data-key={key} aria-live="polite">
      <header className="merchant">
        <span className="logo" aria-hidden="true">
          ◆
        </span>
        <span className="merchant-name">Northwind Supplies</span>
        <span className="secure">Secure checkout</span>
      </header>

      <section className="order" aria-label="Order">
        <p className="order-ref">
          Order <span data-field="reference">{order.reference}</span>
        </p>
        <p className="item">{order.item}</p>
        <p className="amount">{amount}</p>
        <p className="currency">Currency {order.currency}</p>
      </section>

      <section className="status" aria-label="Payment status">
        <span className="badge" data-field="badge">
          {shown.badge}
        </span>
        <p className="message" data-field="message">
          {shown.message}
        </p>
      </section>

      <button className="pay" type="button" data-action="pay" disabled={!canPay} onClick={send}>
        {shown.status === CheckoutStatus.Paid ? 'Paid' : shown.status === CheckoutStatus.Confirming ? 'Confirming…' : `Pay ${amount}`}
      </button>

      <footer className="details">
        <p>
          Idempotency key <code data-field="key">{key ?? '—'}</code>
        </p>
        {paymentId !== undefined && (
          <p>
            Payment <code data-field="receipt">{paymentId}</code>
          </p>
        )}
        <p className="hint">Pressing Pay twice, reloading or losing the network never charges you twice.</p>
      </footer>

      {key !== undefined && <EarlierPayments except={key} />}
    </main>
  );
}

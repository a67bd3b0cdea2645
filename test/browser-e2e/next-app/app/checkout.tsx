'use client';
/**
 * The Pay button, on `oncely/react` against the app's own route handler (`/api/payments`): one
 * client at module level, the payment journaled in IndexedDB before it is sent. The page shows
 * the operation's state in `data-state` and its key in `data-key` for the test to read.
 */
import { createClient } from 'oncely/browser';
import { OncelyProvider, useOperation } from 'oncely/react';

// Module level: created once per page load, and once per server process, where the page is
// rendered first. There it is never used (the hooks touch it in effects only): '/api' is resolved
// against the page at the first call, in the browser.
const client = createClient({ baseUrl: '/api', scope: 'next-checkout', headers: () => ({ 'x-account-id': 'acme' }) });

interface Order {
  readonly reference: string;
  readonly amount: number;
}

function PayButton({ order }: { order: Order }) {
  const { state, send, key } = useOperation({
    path: 'payments',
    json: { amount: order.amount, currency: 'EUR', reference: order.reference },
    naturalKey: ['checkout', order.reference],
  });
  return (
    <main data-state={state.state} data-key={key ?? ''}>
      <h1>Order {order.reference}</h1>
      {state.state === 'prepared' && (
        <button data-action="pay" onClick={send}>
          Pay
        </button>
      )}
      {state.state === 'sending' && <p>Confirming…</p>}
      {state.state === 'pending' && <p>Payment pending: it will go through once you are back online, charged once.</p>}
      {state.state === 'succeeded' && <p>Paid, thank you!</p>}
    </main>
  );
}

export function Checkout({ order }: { order: Order }) {
  return (
    <OncelyProvider client={client}>
      <PayButton order={order} />
    </OncelyProvider>
  );
}

/**
 * The checkout page: one oncely client for the app (created here, once, never in a component),
 * handed to the hooks by `OncelyProvider`, and the Service Worker (`sw.js`) that finishes a
 * payment after its tab is closed. StrictMode stays on: `useOperation` journals the payment
 * once however often React runs its effects.
 *
 * It imports `oncely/browser`, `oncely/react` and `oncely/service-worker`, as an application
 * does; inside the oncely repository those names map to the sources (tsconfig.json `paths`), so
 * the example always runs against the code under test.
 */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient } from 'oncely/browser';
import { OncelyProvider } from 'oncely/react';
import { requestBackgroundSync } from 'oncely/service-worker';
import { Checkout } from './checkout.js';
import { demoHeaders } from './config.js';
import { orderFromUrl, urlForOrder } from './order.js';

// The worker is a production asset (`sw.js` at the root, so its scope is the whole site); the dev
// server has no such file, and there the page's own resume on load is the path.
if (import.meta.env.PROD) navigator.serviceWorker?.register('./sw.js').catch(() => undefined);

const order = orderFromUrl(new URL(location.href));
// Written back so that a reload reopens this order, and so derives the same key.
history.replaceState(null, '', urlForOrder(new URL(location.href), order));

// No `journal` option: oncely/browser's default is the IndexedDB journal, shared by the tabs
// and the worker.
const client = createClient({
  baseUrl: location.origin,
  headers: demoHeaders,
  // useOperation sends a payment again after each send() that leaves it unknown (on `online`,
  // every 3 s), so one send() is kept short: the client's default (a minute) would hold the
  // payment's claim, which the Service Worker then waits for, as long while this tab's requests
  // get no answer.
  retry: { budgetMs: 10_000 },
  // No answer (offline, a dropped connection): the worker is woken once the network is back,
  // and finishes the payment even if this tab is closed by then.
  onUnanswered: () => void requestBackgroundSync(),
});

const root = document.querySelector('#root');
if (!root) throw new Error('checkout page: missing #root');
createRoot(root).render(
  <StrictMode>
    <OncelyProvider client={client}>
      <Checkout order={order} />
    </OncelyProvider>
  </StrictMode>,
);

/**
 * The order the checkout page is paying for. In a real shop it comes from the cart; here it
 * comes from the query string (`?order=ord-42&amount=4900&currency=EUR&item=...`) so tests
 * and demos can open any order. A page opened without `order` gets a fresh reference written
 * back into the URL, so reloading the tab reopens the same order (and the same payment).
 */

/** What the page pays: the body of `POST /v1/payments` plus a label. */
export interface Order {
  /** The merchant's order reference, also the payment's `reference`. */
  readonly reference: string;
  /** Minor units (cents). */
  readonly amount: number;
  /** ISO 4217, upper case. */
  readonly currency: string;
  /** What is being bought, for display only. */
  readonly item: string;
}

const DEFAULT_ORDER = { amount: 4900, currency: 'EUR', item: 'Annual plan — Team (5 seats)' } as const;

function positiveInteger(text: string | null, fallback: number): number {
  const value = Number(text);
  return text !== null && Number.isSafeInteger(value) && value >= 1 ? value : fallback;
}

/**
 * Reads the order from a URL, minting a reference when there is none.
 *
 * @example
 * ```ts
 * orderFromUrl(new URL('https://shop.test/?order=ord-42&amount=4900&currency=eur'));
 * // { reference: 'ord-42', amount: 4900, currency: 'EUR', item: 'Annual plan — Team (5 seats)' }
 * ```
 */
export function orderFromUrl(url: URL): Order {
  const params = url.searchParams;
  const currency = (params.get('currency') ?? DEFAULT_ORDER.currency).toUpperCase();
  return {
    reference: params.get('order') ?? `ord-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
    amount: positiveInteger(params.get('amount'), DEFAULT_ORDER.amount),
    currency: /^[A-Z]{3}$/.test(currency) ? currency : DEFAULT_ORDER.currency,
    item: params.get('item') ?? DEFAULT_ORDER.item,
  };
}

/**
 * The URL that reopens `order` (used with `history.replaceState`, so a reload keeps it).
 *
 * @example
 * ```ts
 * history.replaceState(null, '', urlForOrder(new URL(location.href), order));
 * ```
 */
export function urlForOrder(url: URL, order: Order): URL {
  const next = new URL(url);
  next.searchParams.set('order', order.reference);
  next.searchParams.set('amount', String(order.amount));
  next.searchParams.set('currency', order.currency);
  return next;
}

/**
 * The JSON body of the payment request: only what the server needs, in a stable shape.
 *
 * @example
 * ```ts
 * await client.prepare('POST', '/v1/payments', { json: paymentBody(order), naturalKey: ['checkout', order.reference] });
 * ```
 */
export function paymentBody(order: Order): { amount: number; currency: string; reference: string } {
  return { amount: order.amount, currency: order.currency, reference: order.reference };
}

/**
 * Formats minor units in the browser's locale.
 *
 * @example
 * ```ts
 * formatAmount(4900, 'EUR'); // '€49.00' in en-US
 * ```
 */
export function formatAmount(amount: number, currency: string): string {
  const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(amount / 10 ** digits);
}

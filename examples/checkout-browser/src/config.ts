/**
 * What the checkout page and its Service Worker must agree on: who they pay as, and where they
 * tell each other about payments.
 */

/**
 * The reference server's built-in demo caller. A real shop would not put a token in its page
 * or its worker: its own backend authenticates the session (a cookie, which the worker's
 * requests carry too) and forwards the keyed request.
 */
export const DEMO_TOKEN = 'test_acme';

/**
 * The headers of every attempt, in the page and in the worker. Credentials are never written to
 * the journal: each side supplies its own.
 *
 * @example
 * ```ts
 * createClient({ baseUrl: location.origin, headers: demoHeaders });
 * ```
 */
export const demoHeaders = (): Record<string, string> => ({ authorization: `Bearer ${DEMO_TOKEN}` });

/**
 * The BroadcastChannel the checkout tabs, and the Service Worker, tell each other about payments
 * on (`{ type: 'submitted' | 'settled', key }`).
 */
export const CHANNEL_NAME = 'oncely-checkout';

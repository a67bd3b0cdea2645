/**
 * The browser entry: everything in `oncely`, with the IndexedDB journal as the default.
 *
 * @module
 */
import { buildClient, type Client } from './client/create-client.js';
import type { ClientOptions } from './client/options.js';
import { indexedDbJournal } from './journal/indexeddb.browser.js';

export * from './index.js';
export { indexedDbJournal, type IndexedDbJournalOptions } from './journal/indexeddb.browser.js';

/**
 * Creates a client whose journal, unless `journal` is given, is the IndexedDB database
 * `oncely`, so a pending payment survives a reload or a closed tab; the client owns that
 * journal and closes it in `close()`.
 *
 * @example
 * ```ts
 * import { createClient } from 'oncely/browser';
 *
 * const client = createClient({ baseUrl: '/api' });
 * await client.resume(); // after a reload: finish the payment the last tab left pending
 * const op = await client.prepare('POST', 'v1/payments', { json: { amount: 1250, currency: 'EUR', reference: 'inv-7' } });
 * payButton.onclick = () => op.send(); // a double click sends one operation
 * ```
 */
export function createClient(options: ClientOptions): Client {
  return buildClient(options, () => indexedDbJournal());
}

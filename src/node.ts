/**
 * The Node entry: everything in `oncely`, with the SQLite journal as the default.
 *
 * @module
 */
import { buildClient, type Client } from './client/create-client.js';
import type { ClientOptions } from './client/options.js';
import { sqliteJournal } from './journal/sqlite.node.js';
import { nodeDigest } from './digest.node.js';
import { ErrorCode, OncelyError } from './errors.js';

export * from './index.js';
export { sqliteJournal, type SqliteJournalOptions } from './journal/sqlite.node.js';

/**
 * Creates a client whose journal, unless `journal` is given, is a SQLite file at
 * `ONCELY_JOURNAL` or `~/.oncely/journal.db`; the client
 * owns that journal and closes it in `close()`. That file is shared by every program of the
 * user, so a client on it must be given a `scope` naming its program: without one, its
 * `pending()` and `resume()` would take up another program's operations at the same origin and
 * send them with this client's credentials. `createClient` refuses rather than guess.
 *
 * @example
 * ```ts
 * import { createClient } from 'oncely/node';
 *
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8787', scope: 'settlement', headers: { authorization: 'Bearer test_acme' } });
 * await client.resume(); // finish whatever a previous run left pending
 * const r = await client.post('v1/payments', { json: { amount: 1250, currency: 'EUR', reference: 'inv-7' } });
 * ```
 */
export function createClient(options: ClientOptions): Client {
  if (options.journal === undefined && options.scope === undefined) {
    throw new OncelyError(
      ErrorCode.Config,
      "createClient: give this program a `scope` (e.g. scope: 'settlement'), or a `journal` of its own. The default journal (ONCELY_JOURNAL or ~/.oncely/journal.db) is shared by every program of this user: without a scope, pending() and resume() would take up another program's operations at the same origin and send them with this client's credentials",
    );
  }
  return buildClient(options, () => sqliteJournal(), nodeDigest);
}

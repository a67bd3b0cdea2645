/**
 * Test helpers: the reference app in-process over a private SQLite database, with the request
 * builders and the counts (ledger, rail, step executions) every exactly-once assertion uses.
 */
import { createReferenceApp, type ReferenceApp, type ReferenceAppOptions } from '../../src/reference/app.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import type { KeyStore } from '../../src/server/store/types.js';

export const BASE = 'http://oncely.test';

export interface PaymentBody {
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

export const payment = (amount = 1250, reference = 'inv-7'): PaymentBody => ({ amount, currency: 'EUR', reference });

export interface InProcess {
  readonly app: ReferenceApp;
  post(key: string | null, body: unknown, options?: { token?: string | null; headers?: HeadersInit; raw?: string }): Promise<Response>;
  get(path: string, token?: string | null): Promise<Response>;
  getJson<T = Record<string, unknown>>(path: string, token?: string): Promise<T>;
  /** Rows of an app table (or the key table), optionally for one client. */
  count(table: string, where?: string, params?: readonly unknown[]): Promise<number>;
  /** How often step `step` (H1, H2, H3) ran for any payment of `key`. */
  steps(step: string, key: string, clientId?: string): Promise<number>;
}

/** The app over `store` (default: a private in-memory SQLite database). */
export async function createInProcess(options: Omit<ReferenceAppOptions, 'store'> & { store?: KeyStore } = {}): Promise<InProcess> {
  const { store = sqliteKeyStore({ path: ':memory:' }), ...rest } = options;
  const app = createReferenceApp({ store, leaseMs: 2000, ...rest });
  await app.ready;
  const auth = (token: string | null | undefined): Record<string, string> => (token === null ? {} : { authorization: `Bearer ${token ?? 'test_acme'}` });
  const count = async (table: string, where = '1 = 1', params: readonly unknown[] = []): Promise<number> => {
    const row = await app.store.transaction((tx) => tx.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, params));
    return Number(row?.n ?? 0);
  };
  return {
    app,
    post(key, body, postOptions = {}) {
      const headers = new Headers(postOptions.headers);
      for (const [name, value] of Object.entries(auth(postOptions.token))) headers.set(name, value);
      if (key !== null) headers.set('idempotency-key', key);
      headers.set('content-type', 'application/json');
      return app.fetch(new Request(`${BASE}/v1/payments`, { method: 'POST', headers, body: postOptions.raw ?? JSON.stringify(body) }));
    },
    get: (path, token) => app.fetch(new Request(`${BASE}${path}`, { headers: auth(token) })),
    async getJson<T>(path: string, token?: string) {
      const response = await app.fetch(new Request(`${BASE}${path}`, { headers: auth(token) }));
      return (await response.json()) as T;
    },
    count,
    steps: (step, key, clientId = 'acme') =>
      count('payment_steps', 'step = $1 AND client_id = $2 AND payment_id IN (SELECT id FROM payments WHERE idempotency_key = $3 AND client_id = $2)', [
        step,
        clientId,
        key,
      ]),
  };
}

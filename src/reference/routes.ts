/**
 * The reference app's read endpoints and the inbox: everything under `/v1/` except the
 * idempotent `POST /v1/payments`. Every query is scoped by the caller's `client_id`, and
 * "another caller's" is always answered exactly like "does not exist" (`404`).
 *
 * @module
 */
import type { KeyStore } from '../server/store/types.js';
import { jsonResponse, notFound, pathParam, readJson } from './http.js';
import { type Inbox, parseEvent } from './inbox.js';
import type { Rail } from './rails.js';
import { ProblemType, problem } from '../server/problems.js';

/** Options of {@link createRoutes}. */
export interface RoutesOptions {
  readonly store: KeyStore;
  readonly rail: Rail;
  readonly inbox: Inbox;
  /** Body cap of `POST /v1/events`. */
  readonly maxBodyBytes: number;
}

/** Answers an authenticated `/v1/` request, or `undefined` when no route matches. */
export type Routes = (request: Request, url: URL, clientId: string) => Promise<Response | undefined>;

/** Default and largest page of `GET /v1/ledger`. */
const LEDGER_PAGE = { default: 1000, max: 100_000 } as const;

const iso = (ms: number | string): string => new Date(Number(ms)).toISOString();

interface PaymentRow {
  readonly id: string;
  readonly status: string;
  readonly amount: number | string;
  readonly currency: string;
  readonly reference: string;
  readonly created_at: number | string;
}

function page(url: URL): { limit: number; offset: number } | undefined {
  const limit = Number(url.searchParams.get('limit') ?? LEDGER_PAGE.default);
  const offset = Number(url.searchParams.get('offset') ?? 0);
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > LEDGER_PAGE.max || !Number.isSafeInteger(offset) || offset < 0) return undefined;
  return { limit, offset };
}

/**
 * Creates the `/v1/` routes other than the idempotent POSTs.
 *
 * @example
 * ```ts
 * const routes = createRoutes({ store, rail, inbox, maxBodyBytes: 65_536 });
 * const response = await routes(request, new URL(request.url), 'acme');
 * ```
 */
export function createRoutes(options: RoutesOptions): Routes {
  const { store, rail, inbox, maxBodyBytes } = options;

  async function payment(clientId: string, id: string): Promise<Response> {
    const row = await store.transaction((tx) =>
      tx.get<PaymentRow>('SELECT id, status, amount, currency, reference, created_at FROM payments WHERE id = $1 AND client_id = $2', [id, clientId]),
    );
    if (row === undefined) return notFound('no such payment');
    return jsonResponse(200, { ...row, amount: Number(row.amount), created_at: iso(row.created_at) });
  }

  async function idempotencyKey(clientId: string, key: string): Promise<Response> {
    const row = await store.load(clientId, key);
    if (row === undefined) return notFound('no such key');
    return jsonResponse(200, {
      key: row.key,
      state: row.state,
      recovery_point: row.recoveryPoint,
      response_status: row.response?.status ?? null,
      created_at: iso(row.createdAt),
      expires_at: iso(row.expiresAt),
    });
  }

  async function ledger(clientId: string, url: URL): Promise<Response> {
    const window = page(url);
    if (window === undefined) return problem(ProblemType.InvalidRequest, `limit must be 0-${LEDGER_PAGE.max} and offset ≥ 0`);
    const [count, entries] = await store.transaction(async (tx) => [
      await tx.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM ledger_entries WHERE client_id = $1', [clientId]),
      await tx.all<{ payment_id: string; amount: number | string; currency: string; idempotency_key: string }>(
        `SELECT payment_id, amount, currency, idempotency_key FROM ledger_entries WHERE client_id = $1
         ORDER BY created_at, id LIMIT $2 OFFSET $3`,
        [clientId, window.limit, window.offset],
      ),
    ]);
    return jsonResponse(200, {
      count: Number(count?.n ?? 0),
      entries: entries.map((entry) => ({ ...entry, amount: Number(entry.amount) })),
    });
  }

  async function deliver(request: Request, clientId: string): Promise<Response> {
    const body = await readJson(request, maxBodyBytes);
    if (!body.ok) return body.response;
    const parsed = parseEvent(body.value);
    if (!parsed.ok) return problem(ProblemType.InvalidRequest, parsed.detail);
    return jsonResponse(200, { status: await inbox.deliver(clientId, parsed.event) });
  }

  async function event(clientId: string, id: string): Promise<Response> {
    const record = await inbox.get(clientId, id);
    return record === undefined ? notFound('no such event') : jsonResponse(200, record);
  }

  return async (request, url, clientId) => {
    const { pathname } = url;
    const method = request.method.toUpperCase();
    if (method === 'POST' && pathname === '/v1/events') return deliver(request, clientId);
    if (method !== 'GET') return undefined;
    if (pathname === '/v1/ledger') return ledger(clientId, url);
    if (pathname === '/v1/rail/charges') {
      const charges = await rail.charges(clientId);
      return jsonResponse(200, { count: charges.length, charges });
    }
    for (const [prefix, answer] of [
      ['/v1/payments/', payment],
      ['/v1/idempotency-keys/', idempotencyKey],
      ['/v1/events/', event],
    ] as const) {
      if (!pathname.startsWith(prefix)) continue;
      const param = pathParam(pathname, prefix);
      return param === undefined ? notFound('no such resource') : answer(clientId, param);
    }
    return undefined;
  };
}

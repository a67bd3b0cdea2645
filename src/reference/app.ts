/**
 * The reference payments server as one web-standard `fetch(Request) => Promise<Response>`,
 * built on the server library: the payment operation behind `createIdempotencyHandler`, the
 * read routes and inbox, `/healthz`, `/metrics`, the recovery worker and the reaper.
 *
 * Runtime-neutral: the Node adapter (`oncely serve`) adds the socket, logging, the SIGKILL of
 * the crash faults and static files; tests call `app.fetch(new Request(...))` directly.
 *
 * @module
 */
import type { FingerprintDigest } from '../fingerprint.js';
import { createIdempotencyHandler, type IdempotencyHandler } from '../server/handler.js';
import { createServerMetrics, type ServerMetrics } from '../server/metrics.js';
import { ProblemType, problem } from '../server/problems.js';
import type { KeyStore } from '../server/store/types.js';
import type { IdempotentOperation } from '../server/types.js';
import { createRecoveryWorker, createReaper, type BackgroundLoop, type RecoveryPass } from '../server/worker.js';
import { type Clients, createClients } from './clients.js';
import { FaultKind, type Faults, createFaults } from './faults.js';
import { jsonResponse, notFound } from './http.js';
import { createInbox } from './inbox.js';
import { trackLeases } from './lease-tracker.js';
import { createPaymentOperation } from './payments.js';
import { createRail } from './rails.js';
import { createRiskSystem } from './risk.js';
import { createRoutes } from './routes.js';
import { referenceSchema } from './schema.js';
import { InvalidOptionError } from '../server/errors/invalid-option-error.js';
import { resolveServerOptions, type ServerOptions } from '../server/options.js';

/** Who may read `/metrics`: see {@link ReferenceAppOptions.metrics}. */
export type MetricsAccess = 'off' | 'open' | { readonly token: string };

/** Options of {@link createReferenceApp}; the lease, TTL, wait and body cap are the server library's {@link ServerOptions}, with its defaults. */
export interface ReferenceAppOptions extends Pick<ServerOptions, 'leaseMs' | 'ttlMs' | 'inFlightWaitMs' | 'maxBodyBytes'> {
  /** The key store; the app's own tables are created in it too. The app closes it in `close()`. */
  readonly store: KeyStore;
  /**
   * Bearer token → client id, or a ready {@link Clients}.
   * @default the demo callers: test_acme → acme, test_globex → globex
   */
  readonly clients?: Readonly<Record<string, string>> | Clients | undefined;
  /**
   * A fault spec (see `faults.ts`) or a ready {@link Faults}.
   * @default no faults
   */
  readonly faults?: string | Faults | undefined;
  /**
   * What a `crash-after` fault does once its point committed. Required when the spec has one;
   * `oncely serve` passes a SIGKILL of its own process.
   */
  readonly crash?: ((point: string) => void) | undefined;
  /**
   * Who may read `GET /metrics` (global counters of every caller's requests): `'off'` answers 404,
   * `'open'` anyone who reaches the port, `{ token }` only a request with
   * `Authorization: Bearer <token>` (a scraper's own token, not a caller's).
   * @default 'off'
   */
  readonly metrics?: MetricsAccess | undefined;
  /**
   * Recovery worker interval, ms (the worker runs only after `start()`).
   * @default 1000
   */
  readonly recoveryIntervalMs?: number | undefined;
  /**
   * Reaper interval, ms (runs only after `start()`).
   * @default 60000
   */
  readonly reaperIntervalMs?: number | undefined;
  /**
   * Parked-row backoff (outcome unknown): `min(maxMs, baseMs · 2^attempts)`.
   * @default { baseMs: 1000, maxMs: 60000 }
   */
  readonly parkBackoff?: { readonly baseMs: number; readonly maxMs: number } | undefined;
  /**
   * Told about an error that turned a request into a `503` (a store that cannot be reached, a bug),
   * so the server can log what the client only sees as "unavailable".
   */
  readonly onError?: ((error: unknown, request: Request) => void) | undefined;
  /** Called with the cause whenever an attempt ended in a `503` or a worker backoff (the handler's `hooks.onError`). */
  readonly onAttemptError?: ((error: unknown, ref: { readonly clientId: string; readonly key: string }) => void) | undefined;
  /** Answers a GET that no API route matched (static files), or `undefined` for `404`. */
  readonly assets?: ((request: Request) => Promise<Response | undefined>) | undefined;
  /**
   * SHA-256 of the request fingerprint.
   * @default defaultDigest() (node:crypto on Node, else WebCrypto)
   */
  readonly digest?: FingerprintDigest | undefined;
}

/** The app built by {@link createReferenceApp}. */
export interface ReferenceApp {
  /** Answers one request. Waits for the migration on first use. */
  fetch(request: Request): Promise<Response>;
  /** Resolves once the tables exist (rejects when the store cannot be migrated). */
  readonly ready: Promise<void>;
  readonly store: KeyStore;
  readonly handler: IdempotencyHandler;
  readonly worker: BackgroundLoop<RecoveryPass>;
  readonly reaper: BackgroundLoop<number>;
  readonly metrics: ServerMetrics;
  readonly clients: Clients;
  readonly faults: Faults;
  /** Starts the recovery worker and the reaper. */
  start(): void;
  /** Requests being answered right now. */
  inFlight(): number;
  /**
   * Shuts down: new requests get `503` from now on, in-flight requests get up to `graceMs` to
   * finish, the leases of any still unfinished are released (their rows keep their recovery
   * points and can be taken over at once), the loops stop and the store is closed. Resolves to
   * the requests still unfinished at the end.
   */
  close(graceMs?: number): Promise<number>;
}

function isClients(value: ReferenceAppOptions['clients']): value is Clients {
  return value !== undefined && typeof value.authenticate === 'function';
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Creates the reference payments app.
 *
 * @example
 * ```ts
 * const app = createReferenceApp({ store: sqliteKeyStore({ path: ':memory:' }), leaseMs: 300 });
 * const response = await app.fetch(new Request('http://local/v1/payments', {
 *   method: 'POST',
 *   headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'inv-7', 'content-type': 'application/json' },
 *   body: JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'inv-7' }),
 * }));
 * await app.close();
 * ```
 */
export function createReferenceApp(options: ReferenceAppOptions): ReferenceApp {
  const { store } = options;
  const clients = isClients(options.clients) ? options.clients : createClients(options.clients);
  const faults = typeof options.faults === 'object' ? options.faults : createFaults({ spec: options.faults });
  const crash = options.crash;
  if (crash === undefined && faults.rules.some((rule) => rule.kind === FaultKind.CrashAfter)) {
    throw new InvalidOptionError('createReferenceApp', 'crash', 'is required by a crash-after fault (what "crash" means here)');
  }
  const { leaseMs, ttlMs, inFlightWaitMs, maxBodyBytes } = resolveServerOptions('createReferenceApp', options);
  const metrics = createServerMetrics();
  const risk = createRiskSystem({ store, faults });
  const rail = createRail({ store, faults });
  const inbox = createInbox({ store });
  const leases = trackLeases(store);
  const handler = createIdempotencyHandler({
    store: leases.store,
    // The handler holds operations of different inputs side by side; each parses its own input,
    // so widening the input type to `unknown` here is sound.
    operations: [createPaymentOperation({ risk, rail }) as unknown as IdempotentOperation<unknown>],
    authenticate: (request) => clients.authenticate(request.headers.get('authorization')) ?? null,
    leaseMs,
    ttlMs,
    inFlightWaitMs,
    maxBodyBytes,
    metrics,
    // Only with crash faults: the hook makes each point around an external call a commit of its
    // own on PostgreSQL, so that the process dies exactly where the fault says.
    hooks: {
      ...(options.onAttemptError === undefined ? {} : { onError: options.onAttemptError }),
      ...(crash === undefined || !faults.rules.some((rule) => rule.kind === FaultKind.CrashAfter)
        ? {}
        : {
            afterCommit(point: string) {
              if (faults.fires(FaultKind.CrashAfter, point)) crash(point);
            },
          }),
    },
    ...(options.parkBackoff === undefined ? {} : { parkBackoff: options.parkBackoff }),
    ...(options.digest === undefined ? {} : { digest: options.digest }),
  });
  const routes = createRoutes({ store, rail, inbox, maxBodyBytes });
  const worker = createRecoveryWorker({ store: leases.store, handler, intervalMs: options.recoveryIntervalMs ?? 1000 });
  const reaper = createReaper({ store, metrics, intervalMs: options.reaperIntervalMs ?? 60_000 });
  const ready = store.migrate?.(referenceSchema) ?? Promise.resolve();
  // A failed migration surfaces through `ready` and every request; never as an unhandled rejection.
  ready.catch(() => undefined);

  const metricsAccess = options.metrics ?? 'off';
  if (typeof metricsAccess === 'object' && !(typeof metricsAccess.token === 'string' && metricsAccess.token.length > 0)) {
    throw new InvalidOptionError('createReferenceApp', 'metrics.token', 'must be a non-empty string');
  }
  let draining = false;
  let active = 0;

  async function route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    if (method === 'GET' && url.pathname === '/healthz') {
      // A real round trip: a store that cannot answer makes this throw, and the caller sees 503.
      await store.transaction((tx) => tx.get('SELECT 1 AS ok'));
      return jsonResponse(200, { status: 'ok', store: store.dialect });
    }
    if (method === 'GET' && url.pathname === '/metrics' && metricsAccess !== 'off') {
      if (metricsAccess !== 'open' && !sameSecret(request.headers.get('authorization') ?? '', `Bearer ${metricsAccess.token}`)) {
        return problem(ProblemType.Unauthorized, 'GET /metrics needs the metrics token: Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
      }
      return new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4' } });
    }
    if (url.pathname.startsWith('/v1/')) {
      const keyed = await handler.handle(request);
      if (keyed !== undefined) return keyed;
      const clientId = clients.authenticate(request.headers.get('authorization'));
      if (clientId === undefined) return problem(ProblemType.Unauthorized, 'send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
      return (await routes(request, url, clientId)) ?? notFound(`no route for ${method} ${url.pathname}`);
    }
    if ((method === 'GET' || method === 'HEAD') && options.assets) return (await options.assets(request)) ?? notFound('no such file');
    return notFound(`no route for ${method} ${url.pathname}`);
  }

  return {
    ready,
    store,
    handler,
    worker,
    reaper,
    metrics,
    clients,
    faults,
    async fetch(request) {
      if (draining) {
        return problem(ProblemType.UpstreamUnavailable, 'the server is shutting down; retry with the same key', { 'retry-after': '1' });
      }
      active += 1;
      try {
        await ready;
        return await route(request);
      } catch (error) {
        // The store is down (or the migration failed): fail closed, nothing was executed unrecorded.
        options.onError?.(error, request);
        return problem(ProblemType.UpstreamUnavailable, 'the store is unavailable', { 'retry-after': '1' });
      } finally {
        active -= 1;
      }
    },
    start() {
      worker.start();
      reaper.start();
    },
    inFlight: () => active,
    async close(graceMs = 10_000) {
      draining = true;
      const deadline = Date.now() + graceMs;
      while (active > 0 && Date.now() < deadline) await sleep(20);
      const unfinished = active;
      // Whatever is still running gives its key back now rather than blocking it for a lease:
      // the row keeps its recovery point and the old owner's remaining fenced writes are refused.
      await Promise.all(leases.held().map((lease) => store.write(lease, { kind: 'release', forget: false }).catch(() => undefined)));
      await Promise.all([worker.stop(), reaper.stop()]);
      await ready.catch(() => undefined);
      await store.close?.();
      return unfinished;
    },
  };
}

/** Compares a presented secret with the expected one in time independent of where they differ. */
function sameSecret(given: string, expected: string): boolean {
  let differ = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i += 1) differ |= (given.charCodeAt(i) | 0) ^ expected.charCodeAt(i);
  return differ === 0;
}

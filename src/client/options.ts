/**
 * The client's options, and the fully-resolved shape the rest of the client sees (no
 * `undefined`, ky's `normalizeRetryOptions` habit); `resolve-options.ts` resolves them.
 *
 * @module
 */
import type { Journal } from '../journal/types.js';
import type { FingerprintDigest } from '../fingerprint.js';
import type { TargetOf } from './base-url.js';
import type { AttemptEvent, RetryEvent, SettledEvent, UnansweredEvent } from './results.js';
import type { ResolvedRetryOptions, RetryOptions } from './retry-options.js';
import type { AttemptTracer, TelemetryOptions } from './telemetry.js';

export { DEFAULT_RETRY, normalizeRetryOptions, type ResolvedRetryOptions, type RetryOptions } from './retry-options.js';

/**
 * Hooks, called in order as an operation progresses. A hook that throws stops the operation
 * (it stays pending).
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, onRetry: (e) => console.warn(`retry ${e.key} in ${e.delayMs} ms (${e.status})`) });
 * ```
 */
export interface ClientHooks {
  /** Before each attempt is sent. */
  readonly onAttempt?: (event: AttemptEvent) => void;
  /** After an attempt whose outcome will be retried, before the wait. */
  readonly onRetry?: (event: RetryEvent) => void;
  /**
   * After every attempt that got no answer (a network error or a timeout), retried or not: the
   * outcome is unknown and the operation stays pending. A page can ask its Service Worker to
   * finish the operation from here (`requestBackgroundSync()` of `oncely/service-worker`).
   */
  readonly onUnanswered?: (event: UnansweredEvent) => void;
  /** Once, when an operation settles as `succeeded` or `failed`. */
  readonly onSettled?: (event: SettledEvent) => void;
}

/**
 * Options of `createClient`.
 *
 * @example
 * ```ts
 * const client = createClient({
 *   baseUrl: 'http://127.0.0.1:8787',
 *   headers: { authorization: 'Bearer test_acme' },
 *   journal: memoryJournal(),
 *   retry: { limit: 3, budgetMs: 10_000 },
 * });
 * ```
 */
export interface ClientOptions extends ClientHooks {
  /**
   * Base URL of the API. A relative path (`'v1/payments'`) is joined to it, keeping its path as
   * ky's `prefixUrl` does (`'http://host/api'` + `'v1/payments'` → `http://host/api/v1/payments`);
   * a path starting with `/` is taken from the origin (`'/v1/payments'` → `http://host/v1/payments`).
   * In a page, a relative base URL (`'/api'`) is relative to the page. Where there is no page (a
   * server-side render: Next.js renders client components on the server too) creating the
   * client does not throw; the base is resolved at the first call, and a call made where there
   * is still no page throws a `config` error. Its origin is the client's
   * scope (see `scope`): requests may only go to this origin, and the client's headers are never
   * sent anywhere else.
   * @example
   * ```ts
   * createClient({ baseUrl: 'https://api.example.com/v2' }); // client.post('payments') → https://api.example.com/v2/payments
   * ```
   */
  readonly baseUrl: string;
  /**
   * A name that keeps this application's operations apart from other applications talking to
   * the same origin through the same journal file: `pending()`, `resume()`, keys and
   * `KeyReusedError` are per scope (origin of `baseUrl` + this name). 1–64 characters from
   * `A-Z a-z 0-9 . _ ~ -`. Required by `oncely/node` on its default journal, which every program
   * of the user shares; give clients with different credentials different names too, since
   * `resume()` sends a scope's operations with the calling client's headers.
   * @default none: the scope is the origin of baseUrl alone (refused by `oncely/node` without a `journal`)
   * @example
   * ```ts
   * createClient({ baseUrl: 'https://api.bank.example', scope: 'payroll' });
   * ```
   */
  readonly scope?: string;
  /**
   * Headers sent with every attempt, or a function returning them, called before every attempt
   * (so a refreshed token is used, also by `resume()` after a restart). Only allow-listed
   * headers are journaled (`content-type`, `accept` and `journalHeaders`): credentials and every
   * other header are sent from memory, so the client that resumes an operation must supply
   * them again, here.
   * @default {}
   * @example
   * ```ts
   * createClient({ baseUrl, headers: async () => ({ authorization: `Bearer ${await tokens.current()}` }) });
   * ```
   */
  readonly headers?: Readonly<Record<string, string>> | (() => Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>);
  /**
   * Further request headers (lower- or upper-case names) that may be written to the journal and
   * resent from it on `resume()`, besides `content-type` and `accept`. A name that holds a
   * credential word (`authorization`, `cookie`, `x-api-key`, `x-csrf-token`, …; the rule of
   * `allowCredentialsInQuery`) is refused: credentials are never journaled.
   * @default []
   * @example
   * ```ts
   * createClient({ baseUrl, journalHeaders: ['x-tenant'] });
   * ```
   */
  readonly journalHeaders?: readonly string[];
  /**
   * Query strings are part of the request and are journaled. A query parameter whose name holds
   * a credential word (token, secret, key, pass, auth, sig, credential, session, cookie, jwt, …:
   * `access_token`, `api_token`, `private_token`, `passphrase`, `X-Amz-Signature`), a one-time
   * code (`code` alone, OAuth's authorization code; `code_verifier`, `device_code`, `mfa_code`; not
   * `zip_code` or `country_code`) or whose value is a JWT is refused at `prepare()`, before anything is journaled or sent, unless named here
   * (case-insensitive), or unless this is `true` (every parameter). A `#fragment` is never
   * journaled.
   * @default false
   * @example
   * ```ts
   * createClient({ baseUrl, allowCredentialsInQuery: ['sort_key'] }); // ?sort_key=… is no secret
   * ```
   */
  readonly allowCredentialsInQuery?: boolean | readonly string[];
  /**
   * Where operations are kept from before their first attempt until they settle. Required in
   * the neutral `oncely` entry; `oncely/node` and `oncely/browser` default to a durable journal.
   */
  readonly journal?: Journal;
  /** Retry behaviour. */
  readonly retry?: RetryOptions;
  /**
   * How long the server keeps keys, in milliseconds. A pending operation older than this is
   * `expired`: never resent, surfaced for reconciliation.
   * @default 86_400_000 (24 h)
   */
  readonly keyTtlMs?: number;
  /**
   * The UUID namespace `naturalKey` is derived in (`deriveKey(namespace, ...naturalKey)`).
   * @default DEFAULT_NAMESPACE
   */
  readonly namespace?: string;
  /** Aborts every operation of this client (they stay pending). */
  readonly signal?: AbortSignal;
  /**
   * Timeout of one attempt, in milliseconds: its whole time, from sending the request to the
   * last byte of the response body (0: none); a timed-out attempt is an unknown outcome.
   * @default 30_000
   */
  readonly timeoutMs?: number;
  /**
   * Largest request body journaled and sent, in UTF-8 bytes; a larger one is refused before
   * anything is journaled. Matches the server's default cap. Stored response bodies are cut
   * to the same size.
   * @default 65_536
   */
  readonly maxBodyBytes?: number;
  /**
   * How long a claim on a pending operation lasts before another process may take it over, in
   * milliseconds. It is refreshed while the operation is being sent, so it only matters when a
   * process dies holding it: the operation is then blocked for at most this long.
   * @default 10_000
   */
  readonly claimTtlMs?: number;
  /**
   * Identifies this client in journal claims.
   * @default a fresh UUIDv7 per client
   */
  readonly ownerId?: string;
  /**
   * The `fetch` ky uses, e.g. a server core called in-process.
   * @default globalThis.fetch
   */
  readonly fetch?: (request: Request) => Promise<Response>;
  /** An OpenTelemetry span per attempt (see docs/observability.md); none when omitted. */
  readonly telemetry?: TelemetryOptions;
}

/**
 * {@link ClientOptions} with every default applied.
 *
 * @internal
 */
export interface ResolvedOptions {
  /** `baseUrl` resolved, its origin and the scope: at once, or at first use where a relative one has no page yet (./base-url.ts). */
  readonly target: TargetOf;
  /** The client's headers, lower-case names, evaluated for each attempt. */
  readonly headers: () => Promise<Record<string, string>>;
  /** Header names that may be journaled: `JOURNALED_HEADERS` and `journalHeaders`. */
  readonly journalHeaders: ReadonlySet<string>;
  /** `true`, or the parameter names (lower-case) opted in. */
  readonly allowCredentialsInQuery: true | ReadonlySet<string>;
  readonly journal: Journal;
  readonly retry: ResolvedRetryOptions;
  readonly keyTtlMs: number;
  readonly namespace: string;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly claimTtlMs: number;
  readonly ownerId: string;
  readonly fetch: ((request: Request) => Promise<Response>) | undefined;
  readonly hooks: ClientHooks;
  /** SHA-256 for fingerprints: `defaultDigest()` (node:crypto where the platform offers it, else WebCrypto). */
  readonly digest: FingerprintDigest;
  readonly traceAttempt: AttemptTracer | undefined;
}

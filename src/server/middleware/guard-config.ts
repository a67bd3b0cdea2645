/**
 * The framework guard's options resolved once (`createGuard`): the shared server options, the
 * response cap checked against the store's, the guarded methods and what a request without a key
 * does, each checked so that a bad option fails `idempotent()` itself, never a request.
 *
 * @module
 * @internal
 */
import { InvalidOptionError } from '../errors/invalid-option-error.js';
import { resolveResponseCap, resolveServerOptions, type ResolvedServerOptions } from '../options.js';
import type { KeyStore } from '../store/types.js';
import type { Reporter } from './leased-run.js';
import type { GuardOptions } from './types.js';

/** {@link GuardOptions} with every default filled in and every value checked. */
export interface GuardConfig extends ResolvedServerOptions {
  readonly store: KeyStore;
  readonly maxResponseBytes: number;
  /** The guarded methods, upper case. */
  readonly methods: ReadonlySet<string>;
  readonly keyMissing: 'reject' | 'pass';
  readonly transaction: boolean;
  /** `onError`, contained: a logging hook must not change the answer. */
  readonly report: Reporter;
}

/**
 * Resolves and checks `options`; throws an `InvalidOptionError` naming a bad one.
 *
 * @example
 * ```ts
 * const config = resolveGuardConfig({ store, methods: ['POST'] });
 * config.methods.has('POST'); // true
 * ```
 */
export function resolveGuardConfig(options: GuardOptions): GuardConfig {
  const where = 'idempotent';
  const shared = resolveServerOptions(where, options);
  const store = options.store;
  const maxResponseBytes = resolveResponseCap(where, options.maxResponseBytes, store.maxResponseBytes);
  if (options.keyMissing !== undefined && options.keyMissing !== 'reject' && options.keyMissing !== 'pass') {
    throw new InvalidOptionError(where, 'keyMissing', `must be 'reject' or 'pass', got ${JSON.stringify(options.keyMissing)}`);
  }
  const listed = options.methods ?? ['POST', 'PUT', 'PATCH', 'DELETE'];
  const badMethod = listed.find((method) => typeof method !== 'string' || !/^[A-Za-z]+$/.test(method));
  if (badMethod !== undefined) throw new InvalidOptionError(where, 'methods', `must hold HTTP method names, got ${JSON.stringify(badMethod)}`);
  const report: Reporter = (error, ref) => {
    try {
      options.onError?.(error, ref);
    } catch {
      // A logging hook must not change the answer.
    }
  };
  return {
    ...shared,
    store,
    maxResponseBytes,
    methods: new Set(listed.map((method) => method.toUpperCase())),
    keyMissing: options.keyMissing ?? 'reject',
    transaction: options.transaction === true,
    report,
  };
}

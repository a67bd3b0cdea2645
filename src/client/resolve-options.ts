/**
 * Resolving the client's options once, into {@link ResolvedOptions}: defaults applied, every
 * value checked, so a bad option fails `createClient` rather than a later request.
 *
 * @module
 * @internal
 */
import { isCredentialName } from '../credentials.js';
import { OncelyError, ErrorCode } from '../errors.js';
import { JOURNALED_HEADERS, NEVER_JOURNALED_HEADERS, SCOPE_NAME, type Journal } from '../journal/types.js';
import { DEFAULT_NAMESPACE } from '../keys.js';
import { defaultDigest, type FingerprintDigest } from '../fingerprint.js';
import { resolveTarget } from './base-url.js';
import type { ClientHooks, ClientOptions, ResolvedOptions } from './options.js';
import { nonNegative, normalizeRetryOptions } from './retry-options.js';
import { attemptTracer } from './telemetry.js';

/** `allowCredentialsInQuery` resolved: `true`, or the opted-in names in lower case. */
function allowedInQuery(option: ClientOptions['allowCredentialsInQuery']): true | ReadonlySet<string> {
  if (option === true) return true;
  if (option === undefined || option === false) return new Set();
  if (!Array.isArray(option) || !option.every((name) => typeof name === 'string')) {
    throw new OncelyError(ErrorCode.Config, 'createClient: allowCredentialsInQuery must be true, false or a list of query parameter names');
  }
  return new Set(option.map((name) => name.toLowerCase()));
}

/**
 * Resolves the options once. `journal` falls back to `defaultJournal` (the platform entries'
 * durable journal); without either, the neutral entry refuses rather than silently keeping
 * pending payments in memory.
 *
 * @internal
 */
export function normalizeOptions(
  options: ClientOptions,
  defaultJournal: (() => Journal) | undefined,
  mintOwnerId: () => string,
  digest: FingerprintDigest = defaultDigest(),
): ResolvedOptions {
  const target = resolveTarget(options.baseUrl, options.scope);
  if (options.scope !== undefined && !SCOPE_NAME.test(options.scope)) {
    throw new OncelyError(ErrorCode.Config, `createClient: scope ${JSON.stringify(options.scope)} must be 1–64 characters from A-Z a-z 0-9 . _ ~ -`);
  }
  const journal = options.journal ?? defaultJournal?.();
  if (journal === undefined) {
    throw new OncelyError(
      ErrorCode.Config,
      "createClient: no journal. Pass `journal: memoryJournal()` (pending operations are lost on exit), or import createClient from 'oncely/node' (SQLite) or 'oncely/browser' (IndexedDB) for a durable default",
    );
  }
  const secret = (options.journalHeaders ?? []).find((name) => NEVER_JOURNALED_HEADERS.has(name.toLowerCase()) || isCredentialName(name));
  if (secret !== undefined) {
    const refusal = `createClient: journalHeaders may not name ${JSON.stringify(secret)}: credentials are never written to the journal`;
    throw new OncelyError(ErrorCode.Config, refusal);
  }
  const given = options.headers ?? {};
  const headers = async (): Promise<Record<string, string>> => {
    const current = typeof given === 'function' ? await given() : given;
    const lower: Record<string, string> = {};
    for (const [name, value] of Object.entries(current)) lower[name.toLowerCase()] = value;
    return lower;
  };
  const hooks: ClientHooks = {
    ...(options.onAttempt ? { onAttempt: options.onAttempt } : {}),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    ...(options.onUnanswered ? { onUnanswered: options.onUnanswered } : {}),
    ...(options.onSettled ? { onSettled: options.onSettled } : {}),
  };
  return {
    target,
    headers,
    journalHeaders: new Set([...JOURNALED_HEADERS, ...(options.journalHeaders ?? []).map((name) => name.toLowerCase())]),
    allowCredentialsInQuery: allowedInQuery(options.allowCredentialsInQuery),
    journal,
    retry: normalizeRetryOptions(options.retry),
    keyTtlMs: nonNegative('keyTtlMs', options.keyTtlMs ?? 86_400_000),
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    signal: options.signal,
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs ?? 30_000),
    maxBodyBytes: nonNegative('maxBodyBytes', options.maxBodyBytes ?? 65_536),
    claimTtlMs: nonNegative('claimTtlMs', options.claimTtlMs ?? 10_000),
    ownerId: options.ownerId ?? mintOwnerId(),
    fetch: options.fetch,
    hooks,
    digest,
    traceAttempt: attemptTracer(options.telemetry),
  };
}

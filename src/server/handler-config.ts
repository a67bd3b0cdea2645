/**
 * The idempotency handler's options resolved once: the shared server options, the park backoff,
 * the namespace, and the operations by endpoint, each checked so that a bad option fails
 * `createIdempotencyHandler` itself.
 *
 * @module
 * @internal
 */
import { validate as validateUuid } from 'uuid';
import { DEFAULT_NAMESPACE } from '../keys.js';
import { InvalidOptionError } from './errors/invalid-option-error.js';
import type { IdempotencyHandlerOptions } from './handler-types.js';
import { createServerMetrics } from './metrics.js';
import { integerOption, resolveServerOptions } from './options.js';
import type { IdempotentOperation } from './types.js';

/** The handler's options, resolved: what {@link resolveHandlerConfig} gives as `config`. */
export type HandlerConfig = ReturnType<typeof resolveHandlerConfig>['config'];

/**
 * Resolves and checks `options`; throws an `InvalidOptionError` naming a bad one.
 *
 * @example
 * ```ts
 * const { config, operations } = resolveHandlerConfig({ store, operations: [createPayment], authenticate });
 * operations.get('POST /v1/payments');
 * ```
 * @internal
 */
export function resolveHandlerConfig(options: IdempotencyHandlerOptions) {
  const where = 'createIdempotencyHandler';
  const shared = resolveServerOptions(where, options);
  const backoff = options.parkBackoff ?? { baseMs: 1000, maxMs: 60_000 };
  integerOption(where, 'parkBackoff.baseMs', backoff.baseMs, 0, 1);
  integerOption(where, 'parkBackoff.maxMs', backoff.maxMs, 0, backoff.baseMs);
  const config = {
    ...shared,
    store: options.store,
    authenticate: options.authenticate,
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    hooks: options.hooks ?? {},
    metrics: options.metrics ?? createServerMetrics(),
    backoff,
  };
  if (!validateUuid(config.namespace)) throw new InvalidOptionError(where, 'namespace', `must be a UUID, got ${JSON.stringify(config.namespace)}`);
  const operations = new Map<string, IdempotentOperation<unknown>>();
  for (const operation of options.operations) {
    const endpoint = `${operation.method.toUpperCase()} ${operation.path}`;
    if (operations.has(endpoint)) throw new InvalidOptionError(where, 'operations', `has two operations for ${endpoint}`);
    operations.set(endpoint, operation);
  }
  return { config, operations };
}

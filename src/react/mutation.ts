/**
 * TanStack Query's `useMutation` through oncely: the mutation function prepares (journals) the
 * operation under a key that the mutation's variables name, then sends it. Every call with the
 * same variables — a double `mutate()`, TanStack's own retries, a paused mutation resumed after a
 * reload from a persister — names the same operation, so the server executes it once.
 *
 * @module
 */
import type { Client } from '../client/create-client.js';
import type { RequestOptions } from '../client/request.js';
import type { OperationResult } from '../client/results.js';

/**
 * The request a mutation's variables stand for: `client.prepare()`'s arguments, with the key
 * carried by the variables — `naturalKey` (the order or cart reference) or a `key` minted when
 * the customer submitted (`newKey()`), never minted inside the mutation function, which runs
 * again on each retry and resume.
 *
 * @example
 * ```ts
 * const request: MutationRequest = { path: '/v1/payments', json: { amount: 4900, currency: 'EUR', reference: 'ord-42' }, naturalKey: ['checkout', 'ord-42'] };
 * ```
 */
export type MutationRequest = Omit<RequestOptions, 'key' | 'naturalKey'> & {
  /** @default 'POST' */
  readonly method?: string;
  /** Path under the client's `baseUrl`. */
  readonly path: string;
} & ({ readonly naturalKey: ReadonlyArray<string | number>; readonly key?: never } | { readonly key: string; readonly naturalKey?: never });

/**
 * A `mutationFn` for TanStack Query that goes through oncely: journaled before the first
 * attempt, one key per mutation (from its variables), sent with oncely's retries. It resolves
 * with the operation's result; it rejects with oncely's typed errors, among them
 * `OperationPendingError` — the outcome is unknown, not failed: show it as pending.
 *
 * @example
 * ```ts
 * const pay = useMutation({
 *   mutationKey: ['pay'],
 *   mutationFn: oncelyMutationFn(client, (order: { reference: string; amount: number }) => ({
 *     path: '/v1/payments',
 *     json: { amount: order.amount, currency: 'EUR', reference: order.reference },
 *     naturalKey: ['checkout', order.reference],
 *   })),
 *   networkMode: 'always', // journal at once, offline too: oncely waits for the network itself
 *   retry: false,          // oncely retries, with the same key and Retry-After
 * });
 * ```
 */
export function oncelyMutationFn<TVariables, TData = unknown>(
  client: Client,
  toRequest: (variables: TVariables) => MutationRequest,
): (variables: TVariables) => Promise<OperationResult<TData>> {
  return async (variables) => {
    const { method = 'POST', path, ...request } = toRequest(variables);
    return (await client.prepare(method, path, request)).send<TData>();
  };
}

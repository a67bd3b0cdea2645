/**
 * One logical operation (a checkout's payment) in a React component.
 *
 * ```
 * mount ─► prepare once per (client, method, path, key): key derived or given, journaled ─► state
 *   prepared ──send()──► sending ─► succeeded / failed          (a double click joins the send in flight)
 *   pending, submitted before this load (reload, tab reopened) ─► sent again at once, same key
 *   pending, outcome unknown (offline, budget spent) ─► sent again on `online` and every RESEND_MS
 *   pending after a 401/403 ─► left alone: the next send() (after signing in) sends it
 *   another tab / the Service Worker settles it ─► read from the journal (settled() follows it)
 * ```
 *
 * Why the prepare promise lives outside React: StrictMode mounts every effect twice and a
 * remount starts from fresh state, so neither a ref nor state can make "journal it once" true;
 * a registry keyed by the client and the operation's identity can, and the journal makes it
 * true across reloads (a derived or given key names the same record).
 *
 * @module
 */
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import type { Client } from '../client/create-client.js';
import type { OperationSnapshot } from '../client/follow.js';
import type { Operation } from '../client/operation-handle.js';
import type { RequestOptions } from '../client/request.js';
import { ErrorCode, isOncelyError } from '../errors.js';
import { useOncelyClient } from './client-context.js';

/** How long a pending operation whose outcome is unknown waits before it is sent again, unless `online` comes first. */
const RESEND_MS = 3_000;

/**
 * Options of {@link useOperation}: the request, as `client.prepare()` takes it, with the key
 * that names the logical operation across renders, remounts and reloads: `naturalKey` (derived
 * from your order or cart reference) or a `key` you minted and kept.
 *
 * @example
 * ```ts
 * const options: UseOperationOptions = { path: '/v1/payments', json: { amount: 4900, currency: 'EUR', reference: 'ord-42' }, naturalKey: ['checkout', 'ord-42'] };
 * ```
 */
export type UseOperationOptions = Omit<RequestOptions, 'key' | 'naturalKey' | 'signal'> & {
  /** @default 'POST' */
  readonly method?: string;
  /** Path under the client's `baseUrl`. */
  readonly path: string;
  /** The client; the {@link OncelyProvider}'s when absent. */
  readonly client?: Client;
  /**
   * Send again by itself a payment whose Pay was pressed but whose outcome is unknown (after a
   * reload, when back online). Never a 401/403: that waits for the next `send()`.
   * @default true
   */
  readonly resend?: boolean;
} & ({ readonly naturalKey: ReadonlyArray<string | number>; readonly key?: never } | { readonly key: string; readonly naturalKey?: never });

/**
 * What {@link useOperation} shows: the operation's state, plus `loading` while the journal is
 * read and `unavailable` when it could not be prepared (no IndexedDB, the key already names
 * another request).
 *
 * @example
 * ```ts
 * const busy = (s: OperationView) => s.state === 'loading' || s.state === 'sending' || s.state === 'waiting';
 * ```
 */
export type OperationView = OperationSnapshot | { readonly state: 'loading' } | { readonly state: 'unavailable'; readonly error: unknown };

/**
 * What {@link useOperation} returns.
 *
 * @example
 * ```ts
 * const { state, send, key } = useOperation({ path: '/v1/payments', json, naturalKey: ['checkout', ref] });
 * ```
 */
export interface UseOperationResult {
  /** Where the operation stands; re-renders on every change. */
  readonly state: OperationView;
  /** The idempotency key, once prepared. */
  readonly key: string | undefined;
  /** Sends the operation (a click handler): any number of calls send it once. */
  readonly send: () => void;
  /** The operation itself (`settled()`, `subscribe()`), once prepared. */
  readonly operation: Operation | undefined;
}

const LOADING: OperationView = { state: 'loading' };
const registries = new WeakMap<Client, Map<string, Promise<Operation>>>();
const ignore = (): void => undefined;

/** Prepares the operation once per client and identity, however many components or effects ask. */
function prepareOnce(client: Client, identity: string, prepare: () => Promise<Operation>): Promise<Operation> {
  let registry = registries.get(client);
  if (registry === undefined) registries.set(client, (registry = new Map()));
  let prepared = registry.get(identity);
  if (prepared === undefined) {
    prepared = prepare();
    registry.set(identity, prepared);
    // A failure is not kept: the next mount tries again (the journal may be back).
    prepared.catch(() => registry.delete(identity));
  }
  return prepared;
}

/** A 401/403 leaves the operation pending: sending it again with the same credentials is pointless. */
function refused(error: unknown): boolean {
  return isOncelyError(error, ErrorCode.Http) && (error.status === 401 || error.status === 403);
}

/**
 * Prepares one operation per logical checkout, journaled once (also under StrictMode's double
 * effects and across remounts), sends it on `send()` (a double click sends once), follows its
 * state for the UI, and after a reload finds the same operation and shows its outcome, sending
 * it again if Pay had been pressed. On the server it stays `loading` and touches no storage.
 *
 * @example
 * ```tsx
 * function Pay({ order }: { order: { reference: string; amount: number } }) {
 *   const { state, send } = useOperation({ path: '/v1/payments', json: { ...order, currency: 'EUR' }, naturalKey: ['checkout', order.reference] });
 *   if (state.state === 'succeeded') return <p>Paid</p>;
 *   if (state.state === 'failed') return <p>Declined: {state.error.message}</p>;
 *   return <button disabled={state.state !== 'prepared'} onClick={send}>Pay</button>;
 * }
 * ```
 */
export function useOperation(options: UseOperationOptions): UseOperationResult {
  const client = useOncelyClient(options.client);
  const { method = 'POST', path, client: _client, resend = true, ...request } = options;
  const identity = JSON.stringify([method.toUpperCase(), path, options.key ?? null, options.naturalKey ?? null]);
  // Kept with the identity it was prepared for: another order's operation is never shown for this one.
  const [prepared, setPrepared] = useState<{ identity: string; operation?: Operation; error?: unknown }>();
  const current = prepared?.identity === identity ? prepared : undefined;
  const operation = current?.operation;

  useEffect(() => {
    let live = true;
    prepareOnce(client, identity, () => client.prepare(method, path, request)).then(
      (ready) => live && setPrepared({ identity, operation: ready }),
      (error: unknown) => live && setPrepared({ identity, error }),
    );
    return () => {
      live = false;
    };
    // The identity names the operation; a new body under the same key is the journal's to refuse.
  }, [client, identity]);

  const subscribe = useCallback((listener: () => void) => operation?.subscribe(listener) ?? ignore, [operation]);
  const snapshot = useSyncExternalStore(
    subscribe,
    () => operation?.state ?? LOADING,
    () => LOADING,
  );

  // Another tab or the Service Worker may settle it, or press Pay for it: the journal says so.
  useEffect(() => {
    if (operation === undefined) return undefined;
    const controller = new AbortController();
    operation.settled({ signal: controller.signal }).catch(ignore);
    return () => controller.abort();
  }, [operation]);

  useEffect(() => {
    if (!resend || operation === undefined || snapshot.state !== 'pending' || snapshot.retryAt !== null || refused(snapshot.error)) return undefined;
    const again = (): void => void operation.send().catch(ignore);
    // No error: Pay was pressed before this page load (or in another tab); carry on at once.
    if (snapshot.error === undefined) {
      again();
      return undefined;
    }
    const timer = setTimeout(again, RESEND_MS);
    window.addEventListener('online', again);
    return () => {
      clearTimeout(timer);
      window.removeEventListener('online', again);
    };
  }, [operation, snapshot, resend]);

  const send = useCallback(() => void operation?.send().catch(ignore), [operation]);
  const state: OperationView = current !== undefined && operation === undefined ? { state: 'unavailable', error: current.error } : snapshot;
  return { state, key: operation?.key, send, operation };
}

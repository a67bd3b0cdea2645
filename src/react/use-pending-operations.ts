/**
 * The scope's payments in progress: submitted operations without a final outcome.
 *
 * @module
 */
import { useMemo, useSyncExternalStore } from 'react';
import type { Client } from '../client/create-client.js';
import { useOncelyClient } from './client-context.js';
import { createInProgressStore, type OperationInProgress } from './in-progress-store.js';

/** Server rendering reads no journal: the list is unknown there. */
const onServer = (): undefined => undefined;

/**
 * Lists the client's submitted operations that have no final outcome yet (Pay pressed, not
 * confirmed: "payments in progress"), oldest first; `undefined` while the journal is read, and
 * on the server. The journal is read again every second (whoever settled a payment — this tab,
 * another tab, the Service Worker — the shared journal is where it shows), when the browser comes
 * back online, and whenever an operation of this client changes; what this client knows first
 * wins: a payment it has seen settle leaves the list in the same render as its `useOperation`
 * shows it settled, and one with an attempt on the wire is `sending` (its `attempts`, the
 * answered ones, are still `0` during the first). Operations only prepared (a checkout rendered,
 * Pay not pressed) are left out, as are damaged rows (see `client.pending()`).
 *
 * @example
 * ```tsx
 * function InProgress() {
 *   const pending = usePendingOperations();
 *   return <ul>{pending?.map((op) => <li key={op.key}>{op.key}: {op.sending ? 'sending' : op.state}</li>)}</ul>;
 * }
 * ```
 */
export function usePendingOperations(client?: Client): readonly OperationInProgress[] | undefined {
  const chosen = useOncelyClient(client);
  // One store per client: it reads nothing until subscribed, so StrictMode's discarded memo costs nothing.
  const store = useMemo(() => createInProgressStore(chosen), [chosen]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, onServer);
}

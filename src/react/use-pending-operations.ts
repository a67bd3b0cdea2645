/**
 * The scope's payments in progress: submitted operations without a final outcome.
 *
 * @module
 */
import { useEffect, useState } from 'react';
import type { Client } from '../client/create-client.js';
import type { UnsettledOperation } from '../client/results.js';
import { useOncelyClient } from './client-context.js';

/** How often the journal is read again: other tabs and the Service Worker change it too, and only a read tells. */
const REFRESH_MS = 1_000;

/**
 * Lists the client's submitted operations that have no final outcome yet (Pay pressed, not
 * confirmed: "payments in progress"), oldest first; `undefined` while the journal is read, and
 * on the server. Read again every second (whoever settled a payment — this tab, another tab,
 * the Service Worker — the shared journal is where it shows) and when the browser comes back
 * online. Operations only prepared (a checkout rendered, Pay not pressed) are left out, as are
 * damaged rows (see `client.pending()`).
 *
 * @example
 * ```tsx
 * function InProgress() {
 *   const pending = usePendingOperations();
 *   return <ul>{pending?.map((op) => <li key={op.key}>{op.key}: {op.state}</li>)}</ul>;
 * }
 * ```
 */
export function usePendingOperations(client?: Client): readonly UnsettledOperation[] | undefined {
  const chosen = useOncelyClient(client);
  const [pending, setPending] = useState<readonly UnsettledOperation[]>();
  useEffect(() => {
    let live = true;
    const read = (): void => {
      chosen.pending().then(
        (all) => live && setPending(all.filter((op): op is UnsettledOperation => op.state !== 'damaged' && op.submittedAt !== null)),
        () => undefined,
      );
    };
    read();
    const timer = setInterval(read, REFRESH_MS);
    window.addEventListener('online', read);
    return () => {
      live = false;
      clearInterval(timer);
      window.removeEventListener('online', read);
    };
  }, [chosen]);
  return pending;
}

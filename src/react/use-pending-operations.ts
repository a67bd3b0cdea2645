/**
 * The scope's payments in progress: submitted operations without a final outcome.
 *
 * @module
 */
import { useEffect, useState } from 'react';
import type { Client } from '../client/create-client.js';
import type { UnsettledOperation } from '../client/results.js';
import { useOncelyClient } from './client-context.js';

/**
 * Lists the client's submitted operations that have no final outcome yet (Pay pressed, not
 * confirmed: "payments in progress"), oldest first; `undefined` while the journal is read, and
 * on the server. Re-read whenever an operation of this client changes state and when the
 * browser comes back online. Operations only prepared (a checkout rendered, Pay not pressed)
 * are left out, as are damaged rows (see `client.pending()`).
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
    const stop = chosen.subscribe(read);
    window.addEventListener('online', read);
    return () => {
      live = false;
      stop();
      window.removeEventListener('online', read);
    };
  }, [chosen]);
  return pending;
}

/**
 * The store behind `usePendingOperations`: the scope's submitted, unsettled operations as the
 * journal lists them, corrected by what this client knows first.
 *
 * Two sources, because neither is enough alone:
 *
 * | source | knows | late by |
 * |---|---|---|
 * | the journal (`client.pending()`, read every second, on `online`, and on every change below) | every tab's, the worker's and earlier pages' operations; answered attempts | a read: a payment paid here stayed listed "in progress" until the next one |
 * | the client (`client.subscribe()`) | this client's operations: an attempt on the wire, an outcome in hand | nothing, but only for operations it follows |
 *
 * So a listed operation this client has seen settle is dropped at once (whatever a read that
 * started earlier says), and one with an attempt on the wire here is marked `sending` (the
 * journal's `attempts` counts answered attempts only: `0` during the first one).
 *
 * @module
 */
import type { Client } from '../client/create-client.js';
import { isFinal, type OperationSnapshot } from '../client/follow.js';
import type { UnsettledOperation } from '../client/results.js';

/**
 * A payment in progress, as `usePendingOperations` lists it.
 *
 * @example
 * ```ts
 * const label = (op: OperationInProgress): string => (op.sending ? `sending, attempt ${op.attempts + 1}` : `in progress, ${op.attempts} attempt(s)`);
 * ```
 */
export interface OperationInProgress extends UnsettledOperation {
  /**
   * `true` while an attempt of it is on the wire from this client, or from another tab this
   * client is following it through. `attempts` counts the answered attempts, not this one.
   */
  readonly sending: boolean;
}

/** A store `useSyncExternalStore` can read: a snapshot that only changes when the list does. */
export interface InProgressStore {
  subscribe(onChange: () => void): () => void;
  getSnapshot(): readonly OperationInProgress[] | undefined;
}

/** How often the journal is read again: other tabs and the Service Worker change it too, and only a read tells. */
const REFRESH_MS = 1_000;

const isListed = (op: Awaited<ReturnType<Client['pending']>>[number]): op is UnsettledOperation => op.state !== 'damaged' && op.submittedAt !== null;

/**
 * Creates the store of `client`'s payments in progress. It reads nothing until subscribed, and
 * stops reading when the last subscriber leaves.
 *
 * @example
 * ```ts
 * const store = createInProgressStore(client);
 * const stop = store.subscribe(() => console.log(store.getSnapshot()?.length));
 * ```
 */
export function createInProgressStore(client: Client): InProgressStore {
  const listeners = new Set<() => void>();
  let listed: readonly UnsettledOperation[] | undefined;
  let snapshot: readonly OperationInProgress[] | undefined;
  /** This client's latest word on each key; a final one masks the key until a later read agrees. */
  const live = new Map<string, { readonly snapshot: OperationSnapshot; readonly since: number }>();
  /** Reads started, and the newest one whose answer was taken. */
  let started = 0;
  let taken = 0;

  const publish = (): void => {
    snapshot = listed
      ?.filter((op) => {
        const known = live.get(op.key)?.snapshot;
        return known === undefined || !isFinal(known) || known.state === 'expired';
      })
      .map((op) => ({ ...op, sending: live.get(op.key)?.snapshot.state === 'sending' }));
    listeners.forEach((listener) => listener());
  };
  const read = (): void => {
    const mine = ++started;
    client.pending().then(
      (all) => {
        // An older read answering after a newer one says nothing new.
        if (mine < taken || listeners.size === 0) return;
        taken = mine;
        listed = all.filter(isListed);
        const keys = new Set(listed.map((op) => op.key));
        // A settled key this read no longer lists, read after it settled: the journal has caught up.
        for (const [key, known] of live) if (isFinal(known.snapshot) && known.since < mine && !keys.has(key)) live.delete(key);
        publish();
      },
      () => undefined,
    );
  };
  const heard = (key: string, next: OperationSnapshot): void => {
    live.set(key, { snapshot: next, since: started });
    publish();
    read();
  };

  let stop = (): void => undefined;
  const start = (): void => {
    for (const [key, known] of client.following()) live.set(key, { snapshot: known, since: started });
    const unsubscribe = client.subscribe(heard);
    const timer = setInterval(read, REFRESH_MS);
    window.addEventListener('online', read);
    read();
    stop = () => {
      unsubscribe();
      clearInterval(timer);
      window.removeEventListener('online', read);
    };
  };
  return {
    subscribe(onChange) {
      listeners.add(onChange);
      if (listeners.size === 1) start();
      return () => {
        listeners.delete(onChange);
        if (listeners.size === 0) stop();
      };
    },
    getSnapshot: () => snapshot,
  };
}

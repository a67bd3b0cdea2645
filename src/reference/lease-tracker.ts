/**
 * Which leases this process holds right now, so that shutdown can give them back.
 *
 * A server stopped while a request is still inside a phase would otherwise leave that key
 * blocked for the rest of its lease (10 s by default). Releasing the lease instead clears it at
 * once: the row keeps its recovery point, the next server (or a client retry) takes it over
 * immediately, and the old owner's remaining fenced writes are refused.
 *
 * @module
 */
import { compositeId } from '../composite-id.js';
import type { KeyStore, Lease } from '../server/store/types.js';

/** A store wrapper that remembers the leases granted through it until they are given up. */
export interface LeaseTracker {
  /** The wrapped store: pass it to the handler. */
  readonly store: KeyStore;
  /** Leases granted and not yet finished, released, parked or lost. */
  held(): Lease[];
}

const id = (lease: Lease): string => compositeId(lease.clientId, lease.key);

/**
 * Wraps `store` so that every lease it grants is tracked until its owner lets go of it.
 *
 * @example
 * ```ts
 * const tracker = trackLeases(store);
 * const handler = createIdempotencyHandler({ store: tracker.store, operations, authenticate });
 * // at shutdown
 * for (const lease of tracker.held()) await store.write(lease, { kind: 'release', forget: false });
 * ```
 */
export function trackLeases(store: KeyStore): LeaseTracker {
  const leases = new Map<string, Lease>();
  const hold = (lease: Lease): void => void leases.set(id(lease), lease);
  const drop = (lease: Lease): void => {
    // Only the current holder's token: a stale owner's late call must not forget a newer lease.
    if (leases.get(id(lease))?.token === lease.token) leases.delete(id(lease));
  };
  // Only the three primitives that grant or end a lease are wrapped; every other member (the
  // optional ones included: a member the store lacks stays absent) is the store's own, reached
  // through the prototype, so nothing is forwarded by hand.
  const tracked: KeyStore = Object.create(store) as KeyStore;
  Object.assign(tracked, {
    async admit(input, first) {
      const result = await store.admit(input, first);
      // A whole request comes back finished: no lease is left to hold.
      if (result.owned && result.row.state !== 'finished') hold(result.lease);
      return result;
    },
    async takeOver(clientId, key, leaseMs) {
      const lease = await store.takeOver(clientId, key, leaseMs);
      if (lease) hold(lease);
      return lease;
    },
    // A phase keeps the lease unless it was lost. A finish, release or park drops it once the
    // store has recorded the call (or the lease was lost): one the store refused (a full disk, a
    // dropped connection) leaves the key held, and shutdown gives it back, as the handler's
    // let-go would have once the store recovered.
    async write(lease, change, work) {
      const result = await store.write(lease, change, work);
      if (!result.ok || change.kind !== 'phase') drop(lease);
      return result;
    },
  } satisfies Pick<KeyStore, 'admit' | 'takeOver' | 'write'>);
  return { store: tracked, held: () => [...leases.values()] };
}

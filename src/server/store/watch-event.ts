/**
 * What a store's `watch` tells a watcher of a key (see `KeyStore.watch` in `types.ts`).
 *
 * @module
 */
/** What {@link KeyStore.watch} tells a watcher. */
export const WatchEvent = {
  /**
   * The key's owner let go of it, on this instance or another: it finished, released or parked
   * the row (or deleted it). Load the row to see what it is now; a rare event may be spurious.
   */
  Ended: 'ended',
  /**
   * The store stopped listening (its connection dropped): ends are no longer reported to this
   * watcher, which must find out another way (poll the row).
   */
  Lost: 'lost',
} as const;

/** One of {@link WatchEvent}'s values. */
export type WatchEvent = (typeof WatchEvent)[keyof typeof WatchEvent];

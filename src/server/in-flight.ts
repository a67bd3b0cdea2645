/**
 * A duplicate that finds its key in flight waits for the original's answer instead of bouncing
 * with `409` (a checkout page reloaded mid-payment gets the payment's own response, as a replay).
 *
 * - Same instance: the attempt running the key wakes its waiters the moment it ends.
 * - Other instances: the store's {@link KeyStore.watch} when it has one (PostgreSQL: `LISTEN/NOTIFY`,
 *   the NOTIFY sent by the owner's finishing transaction), one watch per waited key, shared by all
 *   its waiters; then one load of the row, to see an end committed before the watch began. No
 *   query while the owner works. Measured (`bench/in-flight-wait.ts`): the duplicate on another
 *   instance answers a few milliseconds after the original, as one on the same instance does,
 *   where a poll backing off to 500 ms answered a median 270 ms later at 1.8 loads/s per key.
 * - A store without `watch` (SQLite, PGlite), or whose watch failed or dropped: one poll of the row
 *   per waited key, shared by all its waiters, backing off from 50 ms to 500 ms.
 *
 * Either way the wait ends as soon as the row is finished or its lease is gone (the owner gave
 * up, or died: a dead owner sends nothing, but no wait outlasts the lease it saw); the waiter
 * then decides afresh, taking a dead owner's row over as any retry would.
 *
 * A wait never outlasts `inFlightWaitMs`, the client's `Prefer: wait=N` (RFC 7240), nor the
 * owner's lease. When it runs out the answer is `409`, with a short `Retry-After` while the owner
 * is known to be working, and the rest of the lease when it stopped committing.
 *
 * @module
 */
import { compositeId } from '../composite-id.js';
import { WatchEvent, type KeyRow, type KeyStore } from './store/types.js';

/** Waits shorter than this are not worth a wait: answer at once. */
const MIN_WAIT_MS = 10;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 500;
/** An owner that committed this recently (or runs here) is working: retry soon. */
const FRESH_MS = 2000;

interface Group {
  readonly clientId: string;
  readonly key: string;
  readonly waiters: Set<() => void>;
  timer?: ReturnType<typeof setTimeout> | undefined;
  /** Stops the store's watch of the key, once it is watching. */
  unwatch?: (() => void) | undefined;
}

/** The handler's view of keys in flight. */
export interface InFlight {
  /** Marks the key as running in this process until the returned function is called (which wakes its waiters). */
  begin(clientId: string, key: string): () => void;
  /** Whether the key runs in this process now (between {@link InFlight.begin} and its end). */
  running(clientId: string, key: string): boolean;
  /** Waits up to `ms` for the key's owner to end; resolves either way. */
  wait(clientId: string, key: string, ms: number): Promise<void>;
  /** `Retry-After` (ms) for a `409` on `row`. */
  retryAfterMs(row: KeyRow): number;
}

/**
 * The wait budget for a request: the handler's, capped by the client's `Prefer: wait=N`
 * (seconds) and by the owner's remaining lease; 0 when not worth waiting.
 *
 * @example
 * ```ts
 * waitBudget(5000, 'wait=2', 9000); // 2000
 * ```
 */
export function waitBudget(inFlightWaitMs: number, prefer: string | null, leaseRemainingMs: number): number {
  let ms = Math.min(inFlightWaitMs, leaseRemainingMs);
  const asked = prefer === null ? undefined : /(?:^|[,;\s])wait\s*=\s*(\d+)/i.exec(prefer)?.[1];
  if (asked !== undefined) ms = Math.min(ms, Number(asked) * 1000);
  return ms >= MIN_WAIT_MS ? ms : 0;
}

/**
 * Keys in flight over `store`.
 *
 * @example
 * ```ts
 * const inFlight = createInFlight(store, 10_000);
 * const end = inFlight.begin('acme', 'k1');
 * ```
 */
export function createInFlight(store: KeyStore, leaseMs: number): InFlight {
  const running = new Map<string, number>();
  /** The waits of each key, by {@link id}: at most one group (one poll or watch) per key. */
  const groups = new Map<string, Group>();
  const id = (clientId: string, key: string): string => compositeId(clientId, key);
  const current = (group: Group): boolean => groups.get(id(group.clientId, group.key)) === group;

  /** Ends `group` (only that group: a later wait of the key has a group of its own), waking its waiters. */
  const settle = (group: Group): void => {
    if (current(group)) groups.delete(id(group.clientId, group.key));
    clearTimeout(group.timer);
    group.unwatch?.();
    group.unwatch = undefined;
    for (const waiter of group.waiters) waiter();
  };

  /** Loads the row: the group is woken when its owner is done (finished, gone, or its lease over). */
  const check = (group: Group, otherwise: () => void): void => {
    store.load(group.clientId, group.key).then(
      (row) => {
        if (!current(group)) return;
        const over = row === undefined || row.state === 'finished' || row.leaseRemainingMs === null || row.leaseRemainingMs <= 0;
        if (over) settle(group);
        else otherwise();
      },
      // The store is unreachable: stop waiting; the answer says so.
      () => settle(group),
    );
  };

  const poll = (group: Group, everyMs: number): void => {
    if (!current(group)) return;
    group.timer = setTimeout(() => check(group, () => poll(group, Math.min(MAX_POLL_MS, everyMs * 2))), everyMs);
    group.timer.unref?.();
  };

  /** The store's notification when it has one, else (or once it stops listening) the poll. */
  const follow = (group: Group): void => {
    if (store.watch === undefined) return poll(group, FIRST_POLL_MS);
    store
      .watch(group.clientId, group.key, (event) => {
        if (!current(group)) return;
        if (event === WatchEvent.Ended) return check(group, () => undefined);
        group.unwatch = undefined;
        poll(group, FIRST_POLL_MS);
      })
      .then(
        (unwatch) => {
          if (!current(group)) return unwatch();
          group.unwatch = unwatch;
          // An end committed before the store listened went unheard: the row tells.
          check(group, () => undefined);
        },
        () => poll(group, FIRST_POLL_MS),
      );
  };

  return {
    begin(clientId, key) {
      const at = id(clientId, key);
      running.set(at, (running.get(at) ?? 0) + 1);
      return () => {
        const left = (running.get(at) ?? 1) - 1;
        if (left > 0) running.set(at, left);
        else running.delete(at);
        const group = groups.get(at);
        if (group !== undefined) settle(group);
      };
    },
    running: (clientId, key) => running.has(id(clientId, key)),
    wait(clientId, key, ms) {
      const at = id(clientId, key);
      return new Promise<void>((resolve) => {
        let group = groups.get(at);
        const fresh = group === undefined;
        if (group === undefined) groups.set(at, (group = { clientId, key, waiters: new Set() }));
        const mine = group;
        const done = (): void => {
          clearTimeout(timer);
          mine.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          mine.waiters.delete(done);
          // The last waiter gone: nobody needs the poll or the watch any more.
          if (mine.waiters.size === 0 && current(mine)) {
            groups.delete(at);
            clearTimeout(mine.timer);
            mine.unwatch?.();
            mine.unwatch = undefined;
          }
          resolve();
        }, ms);
        mine.waiters.add(done);
        // Running here: its end wakes the group. Elsewhere: the store's notification, or a poll.
        if (fresh && !running.has(at)) follow(mine);
      });
    },
    retryAfterMs(row) {
      const remaining = row.leaseRemainingMs ?? 0;
      const sinceCommit = leaseMs - remaining;
      return running.has(id(row.clientId, row.key)) || sinceCommit <= FRESH_MS ? 1000 : remaining;
    },
  };
}

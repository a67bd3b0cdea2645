/**
 * A duplicate that finds its key in flight waits for the original's answer instead of bouncing
 * with `409` (a checkout page reloaded mid-payment gets the payment's own response, as a replay).
 *
 * - Same instance: the attempt running the key wakes its waiters the moment it ends.
 * - Other instances (several processes on one SQLite file, many on PostgreSQL): one poll of the
 *   row per waited key, shared by all its waiters, backing off from 50 ms to 500 ms. It ends the
 *   wait as soon as the row is finished or its lease is gone (the owner died or gave up: the
 *   waiter then takes it over, as any retry would).
 *
 * A wait never outlasts `inFlightWaitMs`, the client's `Prefer: wait=N` (RFC 7240), nor the
 * owner's lease. When it runs out the answer is `409`, with a short `Retry-After` while the owner
 * is known to be working, and the rest of the lease when it stopped committing.
 *
 * @module
 */
import type { KeyRow, KeyStore } from './store/types.js';

/** Waits shorter than this are not worth a wait: answer at once. */
const MIN_WAIT_MS = 10;
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 500;
/** An owner that committed this recently (or runs here) is working: retry soon. */
const FRESH_MS = 2000;

interface Group {
  readonly waiters: Set<() => void>;
  timer?: ReturnType<typeof setTimeout> | undefined;
}

/** The handler's view of keys in flight. */
export interface InFlight {
  /** Marks the key as running in this process until the returned function is called (which wakes its waiters). */
  begin(clientId: string, key: string): () => void;
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
  const groups = new Map<string, Group>();
  const id = (clientId: string, key: string): string => `${clientId}\u0000${key}`;

  const wake = (at: string): void => {
    const group = groups.get(at);
    if (group === undefined) return;
    groups.delete(at);
    clearTimeout(group.timer);
    for (const waiter of group.waiters) waiter();
  };

  const poll = (at: string, clientId: string, key: string, everyMs: number): void => {
    const group = groups.get(at);
    if (group === undefined) return;
    group.timer = setTimeout(() => {
      store.load(clientId, key).then(
        (row) => {
          const over = row === undefined || row.state === 'finished' || row.leaseRemainingMs === null || row.leaseRemainingMs <= 0;
          if (over) wake(at);
          else poll(at, clientId, key, Math.min(MAX_POLL_MS, everyMs * 2));
        },
        // The store is unreachable: stop waiting; the answer says so.
        () => wake(at),
      );
    }, everyMs);
    group.timer.unref?.();
  };

  return {
    begin(clientId, key) {
      const at = id(clientId, key);
      running.set(at, (running.get(at) ?? 0) + 1);
      return () => {
        const left = (running.get(at) ?? 1) - 1;
        if (left > 0) running.set(at, left);
        else running.delete(at);
        wake(at);
      };
    },
    wait(clientId, key, ms) {
      const at = id(clientId, key);
      return new Promise<void>((resolve) => {
        let group = groups.get(at);
        const fresh = group === undefined;
        if (group === undefined) groups.set(at, (group = { waiters: new Set() }));
        const done = (): void => {
          clearTimeout(timer);
          groups.get(at)?.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(() => {
          const mine = groups.get(at);
          mine?.waiters.delete(done);
          if (mine?.waiters.size === 0) {
            clearTimeout(mine.timer);
            groups.delete(at);
          }
          resolve();
        }, ms);
        group.waiters.add(done);
        // Running here: its end wakes the group. Elsewhere: poll the row.
        if (fresh && !running.has(at)) poll(at, clientId, key, FIRST_POLL_MS);
      });
    },
    retryAfterMs(row) {
      const remaining = row.leaseRemainingMs ?? 0;
      const sinceCommit = leaseMs - remaining;
      return running.has(id(row.clientId, row.key)) || sinceCommit <= FRESH_MS ? 1000 : remaining;
    },
  };
}

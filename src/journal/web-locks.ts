/**
 * Claims held as Web Locks (`navigator.locks`): one exclusive lock per operation, shared by every
 * tab and worker of the origin. A lock dies with the tab that holds it, so a closed tab can
 * never strand a claim; the `ttlMs` of a claim still bounds it, to keep the contract of
 * `Journal.claim()` identical to the lease-record backends.
 *
 * @module
 * @internal
 */
import { compositeId } from '../composite-id.js';

/**
 * The part of the Web Locks API the journal uses (`navigator.locks` satisfies it).
 *
 * @example
 * ```ts
 * const locks: LockRequester = navigator.locks;
 * indexedDbJournal({ locks });
 * ```
 */
export type LockRequester = Pick<LockManager, 'request'>;

interface Held {
  readonly owner: string;
  readonly release: () => void;
  /** Settles once the lock manager has actually let go of the lock. */
  readonly gone: Promise<unknown>;
  /** Epoch ms when the claim runs out; the timer only gives the lock back promptly. */
  until: number;
  timer: ReturnType<typeof setTimeout>;
}

/** Per-journal bookkeeping of the locks this tab holds. */
export interface WebLockClaims {
  /** Takes the lock for `key` unless another holder (here or in another tab) has it. */
  acquire(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives the lock back when `owner` holds it (`owner` undefined: whoever holds it). */
  release(key: string, owner?: string): Promise<void>;
  /** Gives every lock back. */
  releaseAll(): Promise<void>;
}

/** Creates the claim bookkeeping for one journal; lock names are scoped by `scope`. */
export function webLockClaims(locks: LockRequester, scope: string): WebLockClaims {
  const held = new Map<string, Held>();

  const drop = (key: string): Promise<unknown> | undefined => {
    const entry = held.get(key);
    if (!entry) return undefined;
    held.delete(key);
    clearTimeout(entry.timer);
    entry.release();
    return entry.gone;
  };

  const arm = (key: string, ttlMs: number): ReturnType<typeof setTimeout> => {
    const timer = setTimeout(() => void drop(key), ttlMs);
    // Outside browsers (workers, Deno, tests) a pending claim must not keep the process alive.
    (timer as { unref?: () => void }).unref?.();
    return timer;
  };

  const acquireNow = async (key: string, owner: string, ttlMs: number): Promise<boolean> => {
    const mine = held.get(key);
    // Expiry is judged by the clock, like the lease records, not by whether the timer ran yet.
    if (mine && mine.owner !== owner && mine.until <= Date.now()) await drop(key);
    else if (mine) {
      if (mine.owner !== owner) return false;
      clearTimeout(mine.timer);
      mine.until = Date.now() + ttlMs;
      mine.timer = arm(key, ttlMs);
      return true;
    }
    let gone: Promise<unknown> = Promise.resolve();
    const release = await new Promise<(() => void) | null>((resolve, reject) => {
      gone = locks
        .request(`oncely-journal:${compositeId(scope, key)}`, { ifAvailable: true }, (lock) => {
          if (!lock) {
            resolve(null);
            return undefined;
          }
          // The lock is held until this promise settles, i.e. until `release` is called.
          return new Promise<void>((settle) => resolve(() => settle()));
        })
        .catch(reject);
    });
    if (!release) return false;
    held.set(key, { owner, release, gone, until: Date.now() + ttlMs, timer: arm(key, ttlMs) });
    return true;
  };

  // One acquisition per key at a time in this tab. Two at once (an attempt's claim and the
  // keep-alive's, both by one owner) would otherwise both ask the lock manager, and the second
  // would find the lock taken, by its own owner, and answer false.
  const acquiring = new Map<string, Promise<boolean>>();

  return {
    async acquire(key, owner, ttlMs) {
      for (let busy = acquiring.get(key); busy !== undefined; busy = acquiring.get(key)) await busy.catch(() => undefined);
      const attempt = acquireNow(key, owner, ttlMs);
      acquiring.set(key, attempt);
      try {
        return await attempt;
      } finally {
        if (acquiring.get(key) === attempt) acquiring.delete(key);
      }
    },
    async release(key, owner) {
      if (owner === undefined || held.get(key)?.owner === owner) await drop(key);
    },
    async releaseAll() {
      await Promise.all([...held.keys()].map(drop));
    },
  };
}

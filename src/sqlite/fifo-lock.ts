/**
 * The lock a group commit (`group-commit.node.ts`) holds on its connection: first come, first
 * served, without a timer.
 *
 * @module
 * @internal
 */

/**
 * Creates a FIFO lock: one group or exclusive function on the connection at a time, taken in the
 * order asked for.
 *
 * @example
 * ```ts
 * const lock = fifoLock();
 * if (!lock.tryAcquire()) await lock.acquire();
 * try {
 *   // use the connection alone
 * } finally {
 *   lock.release();
 * }
 * ```
 */
export function fifoLock(): { tryAcquire(): boolean; acquire(): Promise<void>; release(): void } {
  let held = false;
  const waiting: Array<() => void> = [];
  return {
    tryAcquire: () => !held && (held = true),
    acquire: () => (held ? new Promise<void>((resolve) => waiting.push(resolve)) : ((held = true), Promise.resolve())),
    release: () => {
      const next = waiting.shift();
      if (next) next();
      else held = false;
    },
  };
}

/**
 * The one busy policy of oncely's SQLite connections (the client journal and the server key
 * store): waiting for another connection's lock never blocks the event loop.
 *
 * SQLite's own busy handler sleeps inside the statement, and better-sqlite3 is synchronous: with
 * a driver busy timeout, a process whose file another process holds locked stops answering
 * anything — every request of a server, every timer — for up to that timeout. So connections are
 * opened with {@link DRIVER_BUSY_TIMEOUT_MS}, a locked file fails at once with SQLITE_BUSY, and
 * whatever found it locked (having changed nothing) is tried again after a {@link busyPause},
 * on a timer, until the caller's busy timeout.
 *
 * @module
 * @internal
 */

/**
 * The busy timeout to open every connection with (better-sqlite3's `timeout` option): none.
 * Waiting is done with {@link busyPause}; see the module comment.
 */
export const DRIVER_BUSY_TIMEOUT_MS = 0;

/** Whether `error` (or its cause, or theirs) says the database was locked by another connection. */
export function isBusy(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 3; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) return true;
  }
  return false;
}

/**
 * How long to pause before trying a locked file again, for a caller that first found it locked
 * at `lockedSince`; `undefined` once it has waited `busyTimeoutMs` (it gives up). Short at first,
 * like SQLite's own busy handler (1, 2, 5, 10 … ms), then at most 50 ms, never past the timeout;
 * jittered, so that processes waiting for one lock do not all try again at the same moment.
 */
export function busyPause(lockedSince: number, now: number, busyTimeoutMs: number): number | undefined {
  const waited = now - lockedSince;
  if (waited >= busyTimeoutMs) return undefined;
  const pause = Math.min(50, 1 + waited / 8) * (0.75 + Math.random() / 2);
  return Math.max(1, Math.min(pause, busyTimeoutMs - waited));
}

/**
 * A commit whose outcome no one can vouch for: the database may have committed it locally, but
 * the standby that synchronous replication waits for never confirmed it (the wait was cancelled
 * or the session ended during it). Thrown instead of a success, so that nothing built on the
 * commit (a stored response, a `201`) is acknowledged; and never "resolved" by reading the row
 * back from the same primary, which would find the local commit and call it landed. The key is
 * resolved by the retry, as for any unknown outcome: a primary that survived holds the row, and
 * the retry replays or resumes it; after a failover to a standby the row is absent, and the work
 * runs once.
 *
 * @module
 */

/** The commit may exist on the primary alone: its outcome is unknown, and is reported as a failure. */
export class CommitUnconfirmedError extends Error {
  override readonly name = 'CommitUnconfirmedError';
  /** Not a PostgreSQL SQLSTATE: the store's own, as `OLOST` is. */
  readonly code = 'OUNCF';

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Whether `error` reports a {@link CommitUnconfirmedError}: the row must not be read back to decide
 * whether the commit landed.
 *
 * @example
 * ```ts
 * if (isCommitUnconfirmed(error)) throw error; // never read back as landed
 * ```
 */
export function isCommitUnconfirmed(error: unknown): boolean {
  return error instanceof CommitUnconfirmedError || (error as { code?: unknown } | null | undefined)?.code === 'OUNCF';
}

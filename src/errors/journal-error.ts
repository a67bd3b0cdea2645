/**
 * A journal that cannot be used (shared by every journal backend).
 *
 * @module
 */
import type { DamagedRecord } from '../journal/types.js';
import { ErrorCode, OncelyError } from './oncely-error.js';

/**
 * The journal cannot be used: a damaged, locked or foreign file, a closed journal, a quota.
 *
 * @example
 * ```ts
 * throw new JournalError('the journal file is locked by another process', {
 *   path: '/var/lib/app/oncely.db',
 *   hint: 'close the other process or pass another path',
 * });
 * ```
 */
export class JournalError extends OncelyError {
  override name = 'JournalError';
  /** The journal's file or database name, when it has one. */
  readonly path: string | undefined;
  /** What the caller can do about it. */
  readonly hint: string;
  /**
   * The one row the error is about, when only that row is damaged (it is never sent; the other
   * operations of the journal can still be used), else `undefined`.
   */
  readonly damaged: DamagedRecord | undefined;

  constructor(
    message: string,
    details: { readonly path?: string | undefined; readonly hint: string; readonly cause?: unknown; readonly damaged?: DamagedRecord },
  ) {
    const where = details.path === undefined ? '' : ` (${details.path})`;
    super(ErrorCode.Journal, `${message}${where}: ${details.hint}`, { cause: details.cause });
    this.path = details.path;
    this.hint = details.hint;
    this.damaged = details.damaged;
  }
}

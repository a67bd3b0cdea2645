/**
 * Turns what SQLite reports about a journal file into a `JournalError` that names the file and
 * says what to do. The advice never includes deleting the file: it may hold the only record
 * of operations whose outcome is unknown.
 *
 * @module
 * @internal
 */
import { JournalError } from '../errors.js';
import type { SchemaProblem } from './sqlite-schema.node.js';

const KEEP = 'oncely never resets or deletes it, because it may hold operations whose outcome is still unknown';

/** The journal's `close()` was called; a new journal must be created. */
export function closedError(path: string): JournalError {
  return new JournalError('the SQLite journal is closed', { path, hint: 'create a new journal with sqliteJournal()' });
}

/** A file that is a SQLite database but not (or not yet) an oncely journal this code can use. */
export function schemaError(path: string, problem: SchemaProblem): JournalError {
  if (problem.kind === 'newer') {
    return new JournalError(`the file is a journal from a newer oncely: ${problem.detail}`, {
      path,
      hint: 'upgrade oncely to the version that wrote it, or give this process another path (option `path` or ONCELY_JOURNAL)',
    });
  }
  return new JournalError(`the file is not an oncely journal: ${problem.detail}`, {
    path,
    hint: 'give the journal a file of its own (option `path` or ONCELY_JOURNAL); oncely never writes to a database it does not own',
  });
}

/** Maps a SQLite driver error (`code` `SQLITE_…` on both drivers) or a `JournalError` already made to a `JournalError`. */
export function journalErrorFrom(error: unknown, path: string, busyTimeoutMs: number): JournalError {
  if (error instanceof JournalError) return error;
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  const detail = error instanceof Error ? error.message : String(error);
  const base = code.split('_').slice(0, 2).join('_');
  switch (base) {
    case 'SQLITE_NOTADB':
    case 'SQLITE_CORRUPT':
      return new JournalError(`the journal file is damaged (${detail})`, {
        path,
        hint: `move it aside and start with a new file; pending operations may be salvaged with \`sqlite3 <file> .recover\`. ${KEEP}`,
        cause: error,
      });
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return new JournalError(`the journal file stayed locked by another connection for over ${busyTimeoutMs} ms`, {
        path,
        hint: 'find the process holding a long transaction on it, or raise busyTimeoutMs; the call can be retried',
        cause: error,
      });
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_READONLY':
    case 'SQLITE_PERM':
    case 'SQLITE_AUTH':
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
    case 'ENOTDIR':
    case 'EEXIST':
      return new JournalError(`the journal file cannot be opened for writing (${detail})`, {
        path,
        hint: 'check that its directory exists and that this user may write the file and its -wal/-shm siblings',
        cause: error,
      });
    case 'SQLITE_FULL':
    case 'SQLITE_IOERR':
      return new JournalError(`the journal file could not be written (${detail})`, {
        path,
        hint: 'free disk space or fix the storage, then retry; nothing was sent for the failed write',
        cause: error,
      });
    default:
      return new JournalError(`the journal failed (${detail})`, {
        path,
        hint: 'see the cause; the journal file was left as it was',
        cause: error,
      });
  }
}

/**
 * One call of a group commit (`group-commit.node.ts`): what kind of call it is, the savepoint it
 * may have, and what its success or failure does to the group's open transaction.
 *
 * @module
 * @internal
 */
import type { SqliteDatabase, SqliteStatement } from './driver.node.js';

/**
 * What a call does, which decides its transaction and how a failure is undone:
 *
 * | kind     | alone                         | in a group          | when it throws                      |
 * | -------- | ----------------------------- | ------------------- | ----------------------------------- |
 * | `read`   | no transaction                | joins the group's   | nothing to undo                     |
 * | `write`  | no BEGIN: one statement is its own transaction | joins the group's | SQLite undoes the failed statement |
 * | `atomic` | in `BEGIN IMMEDIATE`          | in its own savepoint | all of it is undone                |
 * | `scoped` | in `BEGIN IMMEDIATE`          | in the group's      | undone back to its savepoint, which it opens itself ({@link CallScope.savepoint}); what it wrote before stays |
 *
 * A group takes the write lock up front (`BEGIN IMMEDIATE`) unless all its calls read.
 */
export type CallKind = 'read' | 'write' | 'atomic' | 'scoped';

/** What a call gets while it runs. */
export interface CallScope {
  /**
   * A `scoped` call opens its savepoint here, before the first statement that must be undone if
   * the call throws; later calls do nothing. An `atomic` call's is open already (no-op); `read`
   * and `write` calls have none (it throws).
   */
  savepoint(): void;
}

/** How a call ended, before its group's transaction did. */
export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** The transaction statements of a connection, prepared once. */
export interface Control {
  readonly db: SqliteDatabase;
  readonly beginWrite: SqliteStatement;
  readonly beginRead: SqliteStatement;
  readonly commit: SqliteStatement;
  readonly rollback: SqliteStatement;
  readonly savepoint: SqliteStatement;
  readonly release: SqliteStatement;
  readonly rollbackTo: SqliteStatement;
}

/** Prepares {@link Control}'s statements on `db`. */
export function controlStatements(db: SqliteDatabase): Control {
  return {
    db,
    beginWrite: db.prepare('BEGIN IMMEDIATE'),
    beginRead: db.prepare('BEGIN'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT oncely_call'),
    release: db.prepare('RELEASE oncely_call'),
    rollbackTo: db.prepare('ROLLBACK TO oncely_call'),
  };
}

/** The scope of an `atomic` or `scoped` call; `open: false` for an atomic call alone (its transaction is its undo). */
export class Savepoint implements CallScope {
  opened = false;
  constructor(
    private readonly db: SqliteDatabase,
    private readonly statements: Control,
    private readonly open: boolean,
  ) {}

  savepoint(): void {
    if (this.opened || !this.open) return;
    // Outside a transaction SAVEPOINT would begin one of its own, outside the group.
    if (!this.db.inTransaction) throw ended();
    this.statements.savepoint.run();
    this.opened = true;
  }
}

const noSavepoint = (kind: CallKind): CallScope => ({
  savepoint() {
    throw new TypeError(`a '${kind}' call has no savepoint: submit it as 'scoped'`);
  },
});
/** The scopes of `read` and `write` calls, which have no savepoint. */
export const SCOPES: Record<'read' | 'write', CallScope> = { read: noSavepoint('read'), write: noSavepoint('write') };

/** A call of an open group returned `value`: its savepoint (if any) is released. */
export function succeeded(db: SqliteDatabase, statements: Control, opened: boolean, value: unknown): Outcome {
  // SQLite may have rolled the whole transaction back (SQLITE_FULL, SQLITE_IOERR, even inside a
  // savepoint) under a call that caught the error and went on.
  if (!db.inTransaction) throw ended();
  if (opened) statements.release.run();
  return { ok: true, value };
}

/** A call of an open group threw: it is undone back to its savepoint (if any) and fails alone. */
export function failed(db: SqliteDatabase, statements: Control, opened: boolean, error: unknown): Outcome {
  // The group's earlier calls are gone with the transaction: none of them may be reported done.
  if (!db.inTransaction) throw error;
  if (opened) {
    statements.rollbackTo.run();
    statements.release.run();
  }
  return { ok: false, error };
}

/** The error of a call whose transaction SQLite ended under it. */
function ended(): Error {
  return new Error('SQLite ended the transaction (I/O error or disk full); nothing of this write was committed');
}

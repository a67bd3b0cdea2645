/**
 * The SQLite journal for Node: one file, one row per operation, shared safely by every process
 * of a user (or a service) through claims.
 *
 * The driver (`node:sqlite` where Node has it, else better-sqlite3: `../sqlite/driver.node.ts`) is
 * synchronous; the {@link Journal} methods are async to share the contract
 * with IndexedDB, and to group the calls made in one tick into one transaction (group commit,
 * see `../sqlite/group-commit.node.ts`). A method that resolved has committed its transaction.
 *
 * @module
 */
import { JournalError } from '../errors.js';
import {
  OperationState,
  type DamagedRecord,
  type Journal,
  type NewOperation,
  type OperationPatch,
  type OperationRecord,
  type PutOutcome,
  newRecord,
  replacesRefused,
} from './types.js';
import { isProvablyDead, thisProcess } from './process-owner.node.js';
import { defaultJournalPath, ensureJournalFile, isInMemory } from './default.node.js';
import { prepareSchema } from './sqlite-schema.node.js';
import { journalErrorFrom, schemaError, closedError } from './sqlite-errors.node.js';
import { DRIVER_BUSY_TIMEOUT_MS } from '../sqlite/busy.node.js';
import { openDatabase, resolveDriver, type SqliteDatabase } from '../sqlite/driver.node.js';
import { groupCommit, type CallKind } from '../sqlite/group-commit.node.js';
import { applyPatch, readRow, statements, updateValues, type Row, type Statements } from './sqlite-statements.node.js';
import { nodeSeal } from './seal.node.js';
import { openMark, type WriteMark } from './sqlite-mark.node.js';
import { Durability, type SqliteJournal, type SqliteJournalOptions } from './sqlite-options.node.js';

export { Durability, type SqliteJournal, type SqliteJournalOptions };

/** An open file: its connection, its statements, and its high-water mark (none in memory). */
interface Connection {
  readonly db: SqliteDatabase;
  readonly sql: Statements;
  readonly mark: WriteMark | undefined;
}

/** A call's result and, when it wrote operations, the count of operations written after it. */
interface Counted<T> {
  readonly value: T;
  readonly written: number | undefined;
}

/**
 * Creates a journal in a SQLite file (WAL), on Node's built-in `node:sqlite` where it serves (Node
 * 22.16+), else on better-sqlite3 (option `driver`). The file is opened on first use;
 * a damaged, locked, foreign or newer-version file makes that call reject with a
 * `JournalError` naming the path and what to do — the file itself is never reset or deleted.
 * So does a file that no longer holds every operation it wrote (a damaged or cut-short `-wal`):
 * the count of operations written is kept in a `<path>-mark` file beside it, see
 * `sqlite-mark.node.ts`.
 *
 * @example
 * ```ts
 * import { createClient, sqliteJournal } from 'oncely/node';
 *
 * const client = createClient({
 *   baseUrl: 'https://api.example.com',
 *   journal: sqliteJournal({ path: '/var/lib/app/oncely.db', durability: 'power' }),
 * });
 * ```
 */
export function sqliteJournal(options: SqliteJournalOptions = {}): SqliteJournal {
  const path = defaultJournalPath({ path: options.path });
  const durability = options.durability ?? Durability.Process;
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const verifyOnOpen = options.verifyOnOpen ?? true;
  const driver = resolveDriver(options.driver);
  let connection: Connection | undefined;
  // `closing`: close() was called, later calls reject; `closed`: the connection is gone.
  let closing = false;
  let closed = false;
  // Write-behinds not yet committed: close() waits for them (see updateLater).
  const behind = new Set<Promise<void>>();

  // Opened lazily, so creating a client never touches the disk, and retried on the next call
  // after a failure: a lock held by another process is usually temporary.
  const open = (): Connection => {
    if (closed) throw closedError(path);
    if (connection) return connection;
    let db: SqliteDatabase | undefined;
    try {
      ensureJournalFile(path);
      // No driver busy wait (it would block the event loop): a lock is waited for by the group
      // commit, which runs this again later.
      db = openDatabase(path, { driver, timeout: DRIVER_BUSY_TIMEOUT_MS });
      db.pragma(`synchronous = ${durability === Durability.Power ? 'FULL' : 'NORMAL'}`);
      if (verifyOnOpen) {
        const check = db.pragma('quick_check', { simple: true });
        if (check !== 'ok') throw Object.assign(new Error(`quick_check: ${String(check)}`), { code: 'SQLITE_CORRUPT' });
      }
      // Schema before WAL: switching a foreign file to WAL would already be a write to it.
      const problem = prepareSchema(db);
      if (problem) throw schemaError(path, problem);
      db.pragma('journal_mode = WAL');
      // Before any write: a write would go over the WAL frames a loss report keeps.
      const mark = isInMemory(path) ? undefined : openMark(db, path);
      connection = { db, sql: statements(db), mark };
      return connection;
    } catch (error) {
      db?.close();
      throw journalErrorFrom(error, path, busyTimeoutMs);
    }
  };

  const mapError = (error: unknown): unknown => journalErrorFrom(error, path, busyTimeoutMs);
  const queue = groupCommit({ connect: () => open().db, mapError, busyTimeoutMs, gather: 'tick' });
  const run = <T>(kind: CallKind, work: (sql: Statements) => T): Promise<T> => {
    if (closing) return Promise.reject(closedError(path));
    return queue.submit(kind, () => work(open().sql));
  };
  // Queued ahead of every later call, so each of them sees it; committed with the next call's
  // group, or on the next turn of the event loop, whichever comes first.
  const updateLater = (scope: string, key: string, patch: OperationPatch): Promise<void> => {
    if (closing) return Promise.reject(closedError(path));
    const write = queue.defer('scoped', () => void patchRow(open().sql, scope, key, patch));
    behind.add(write);
    const done = (): void => void behind.delete(write);
    write.then(done, done);
    return write;
  };

  // One damaged row must not stop the rest: reads sort rows into records and damaged ones.
  const recordOf = (row: Row): OperationRecord => {
    const read = readRow(row);
    if ('record' in read) return read.record;
    throw new JournalError(`the journal row for Idempotency-Key ${row.key} (${row.scope}) is damaged: ${read.damaged.reason}`, {
      path,
      hint: 'it is left as it is; `oncely pending` lists it. Inspect the file with sqlite3, or delete the row yourself',
      damaged: read.damaged,
    });
  };
  const rowsOf = (sql: Statements, state: OperationState | 'any', scope: string | undefined): IterableIterator<Row> =>
    sql.list[state].iterate({ scope: scope ?? null });

  // The row is read back and checked before the patch, and written whole with its new seal: a
  // row changed outside oncely is never rewritten into one that reads as intact. Submitted as
  // 'scoped', so the read and the write share one transaction; its one write needs no savepoint.
  const patchRow = (sql: Statements, scope: string, key: string, patch: OperationPatch): OperationRecord | undefined => {
    const row = sql.get.get(scope, key);
    if (row === undefined) return undefined;
    const next = applyPatch(recordOf(row), patch, Date.now());
    sql.update.run(updateValues(next, patch, nodeSeal.sealOf(next)));
    return next;
  };

  // Counts the operations a call wrote, in its transaction; the mark follows once it committed.
  const counted = (sql: Statements, outcomes: PutOutcome[]): Counted<PutOutcome[]> => {
    const created = outcomes.filter((outcome) => outcome.created).length;
    return { value: outcomes, written: created === 0 ? undefined : sql.written.get(created)?.operations_written };
  };
  const marked = <T>(result: Counted<T>): T => {
    if (result.written !== undefined) connection?.mark?.advance(result.written);
    return result.value;
  };

  const insert = (sql: Statements, operation: NewOperation, now: number): PutOutcome => {
    const record = newRecord(operation, now);
    const { claim } = operation;
    const values = {
      scope: record.scope,
      key: record.key,
      method: record.method,
      url: record.url,
      headers: JSON.stringify(record.headers),
      body: record.body,
      fingerprint: record.fingerprint,
      createdAt: record.createdAt,
      submittedAt: record.submittedAt,
      now,
      claimOwner: claim?.owner ?? null,
      claimedUntil: claim === undefined ? null : now + claim.ttlMs,
      claimProcess: claim === undefined ? null : thisProcess(),
      seal: nodeSeal.sealOf(record),
    };
    const created: PutOutcome = { created: true, record, ...(claim === undefined ? {} : { claimed: true }) };
    if (sql.insert.run(values).changes === 1) return created;
    const existing = recordOf(sql.get.get(operation.scope, operation.key) as Row); // a damaged row throws: never rewritten
    if (!replacesRefused(existing, operation)) return { created: false, record: existing };
    // The statement checks the rule again: another process may have changed the row meanwhile.
    if (sql.replace.run(values).changes === 1) return created;
    return { created: false, record: recordOf(sql.get.get(operation.scope, operation.key) as Row) };
  };

  return {
    kind: 'sqlite',
    path,
    durability,
    driver,
    async put(operation) {
      // 'atomic': the row and the count of operations written commit together, one commit where
      // two statements alone would each make their own (the mark's cost, measured in post()).
      const [outcome] = marked(await run('atomic', (sql) => counted(sql, [insert(sql, operation, Date.now())])));
      return outcome as PutOutcome;
    },
    async putMany(operations) {
      return marked(
        await run('atomic', (sql) => {
          const now = Date.now();
          return counted(
            sql,
            operations.map((operation) => insert(sql, operation, now)),
          );
        }),
      );
    },
    get(scope, key) {
      return run('read', (sql) => {
        const row = sql.get.get(scope, key);
        return row ? recordOf(row) : undefined;
      });
    },
    update(scope, key, patch: OperationPatch) {
      return run('scoped', (sql) => patchRow(sql, scope, key, patch));
    },
    // 'power' promises that what a call reported is on disk: its writes are never left behind.
    ...(durability === Durability.Power ? {} : { updateLater }),
    list(filter = {}) {
      return run('read', (sql) => {
        const records: OperationRecord[] = [];
        const wanted = filter.limit ?? Infinity;
        // Damaged rows are skipped; with a limit, read on until enough healthy ones are found.
        for (const row of rowsOf(sql, filter.state ?? 'any', filter.scope)) {
          if (records.length >= wanted) break;
          const read = readRow(row);
          if ('record' in read) records.push(read.record);
        }
        return records;
      });
    },
    damaged(filter = {}) {
      return run('read', (sql) => {
        const damaged: DamagedRecord[] = [];
        for (const row of rowsOf(sql, 'any', filter.scope)) {
          const read = readRow(row);
          if ('damaged' in read) damaged.push(read.damaged);
        }
        return damaged;
      });
    },
    claim(scope, key, owner, ttlMs) {
      // Read and write in one immediate transaction ('atomic'): two processes must never both
      // see the claim free.
      return run('atomic', (sql) => {
        const now = Date.now();
        const holder = sql.holder.get(scope, key);
        if (holder === undefined || holder.state !== OperationState.Pending) return false;
        const free = holder.claimed_until === null || holder.claimed_until <= now || holder.claim_owner === owner || isProvablyDead(holder.claim_process);
        if (!free) return false;
        sql.claim.run({ scope, key, owner, until: now + ttlMs, process: thisProcess() });
        return true;
      });
    },
    async release(scope, key, owner) {
      await run('write', (sql) => sql.release.run(scope, key, owner));
    },
    prune(olderThanMs) {
      // Only rows that read back intact: a damaged row is reported, never deleted.
      return run('atomic', (sql) => {
        const intact = sql.prunable.all(Date.now() - olderThanMs).filter((row) => 'record' in readRow(row));
        for (const row of intact) sql.remove.run(row.scope, row.key);
        return intact.length;
      });
    },
    async close() {
      closing = true;
      // Write-behinds commit before close() resolves, waiting out another process's lock as any
      // call does (drain() would not wait for it).
      if (behind.size > 0) await Promise.allSettled([...behind]);
      // Calls already queued still run (they were made before close); later ones reject.
      queue.drain();
      closed = true;
      const current = connection;
      connection = undefined;
      current?.mark?.close();
      current?.db.close();
    },
  };
}

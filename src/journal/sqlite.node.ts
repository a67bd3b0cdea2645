/**
 * The SQLite journal for Node: one file, one row per operation, shared safely by every process
 * of a user (or a service) through claims.
 *
 * better-sqlite3 is synchronous; the {@link Journal} methods are async only to share the
 * contract with IndexedDB. A method that resolved has committed its transaction.
 *
 * @module
 */
import Database from 'better-sqlite3';
import {
  OperationState,
  type Journal,
  type NewOperation,
  type OperationPatch,
  type OperationRecord,
  type PutOutcome,
} from './types.js';
import { defaultJournalPath, ensureJournalDirectory } from './default.node.js';
import { prepareSchema } from './sqlite-schema.node.js';
import { journalErrorFrom, schemaError, closedError } from './sqlite-errors.node.js';

/** How much a committed write survives. */
export const Durability = {
  /**
   * Survives a crash or kill of the process (WAL, `synchronous=NORMAL`): a committed write is
   * in the WAL file in the OS's page cache. A power loss or OS crash may lose the last writes.
   */
  Process: 'process',
  /** Survives power loss too (WAL, `synchronous=FULL`): every commit waits for fsync. */
  Power: 'power',
} as const;

/** One of {@link Durability}'s values. */
export type Durability = (typeof Durability)[keyof typeof Durability];

/** Options of {@link sqliteJournal}. */
export interface SqliteJournalOptions {
  /**
   * The journal file; its directory is created if missing. Without it: `ONCELY_JOURNAL`, else
   * `~/.oncely/journal.db` (see {@link defaultJournalPath}).
   *
   * @example
   * ```ts
   * sqliteJournal({ path: '/var/lib/payroll/oncely.db' });
   * ```
   */
  readonly path?: string;
  /**
   * `'process'` survives a crash or `SIGKILL` of the process; `'power'` also survives power loss
   * at the cost of an fsync per write (see {@link Durability}).
   *
   * @default 'process'
   * @example
   * ```ts
   * sqliteJournal({ durability: 'power' });
   * ```
   */
  readonly durability?: Durability;
  /**
   * How long a write waits for another process's lock on the file before failing with a
   * `JournalError`.
   *
   * @default 5000
   * @example
   * ```ts
   * sqliteJournal({ busyTimeoutMs: 30_000 });
   * ```
   */
  readonly busyTimeoutMs?: number;
  /**
   * Run `PRAGMA quick_check` when the file is opened, so a damaged file is reported at once
   * rather than when a damaged page is first read.
   *
   * @default true
   * @example
   * ```ts
   * sqliteJournal({ verifyOnOpen: false }); // huge journals where the scan costs too much
   * ```
   */
  readonly verifyOnOpen?: boolean;
}

/** A {@link Journal} backed by a SQLite file. */
export interface SqliteJournal extends Journal {
  readonly kind: 'sqlite';
  /** The resolved file path. */
  readonly path: string;
  readonly durability: Durability;
}

interface Row {
  key: string;
  method: string;
  url: string;
  headers: string;
  body: string | null;
  fingerprint: string;
  state: OperationState;
  created_at: number;
  updated_at: number;
  attempts: number;
  last_status: number | null;
  result: string | null;
}

const toRecord = (row: Row): OperationRecord => ({
  key: row.key,
  method: row.method,
  url: row.url,
  headers: JSON.parse(row.headers) as Record<string, string>,
  body: row.body,
  fingerprint: row.fingerprint,
  state: row.state,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  attempts: row.attempts,
  lastStatus: row.last_status,
  result: row.result === null ? null : (JSON.parse(row.result) as OperationRecord['result']),
});

const COLUMNS = 'key, method, url, headers, body, fingerprint, state, created_at, updated_at, attempts, last_status, result';

function statements(db: Database.Database) {
  return {
    insert: db.prepare<[Record<string, unknown>], Row>(
      `INSERT INTO oncely_operations (key, method, url, headers, body, fingerprint, state, created_at, updated_at)
       VALUES (@key, @method, @url, @headers, @body, @fingerprint, 'pending', @createdAt, @now)
       ON CONFLICT (key) DO NOTHING RETURNING ${COLUMNS}`,
    ),
    get: db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM oncely_operations WHERE key = ?`),
    // One statement, so an update is atomic without a transaction. `has*` flags tell "leave as
    // is" apart from "set to null". Settling clears the claim: a settled op is never resumed.
    update: db.prepare<[Record<string, unknown>], Row>(
      `UPDATE oncely_operations SET
         state = CASE WHEN @hasState THEN @state ELSE state END,
         attempts = CASE WHEN @hasAttempts THEN @attempts ELSE attempts END,
         last_status = CASE WHEN @hasLastStatus THEN @lastStatus ELSE last_status END,
         result = CASE WHEN @hasResult THEN @result ELSE result END,
         updated_at = MAX(@now, updated_at),
         claim_owner = CASE WHEN @hasState AND @state <> 'pending' THEN NULL ELSE claim_owner END,
         claimed_until = CASE WHEN @hasState AND @state <> 'pending' THEN NULL ELSE claimed_until END
       WHERE key = @key RETURNING ${COLUMNS}`,
    ),
    listAll: db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM oncely_operations ORDER BY created_at, rowid LIMIT ?`),
    // Literal states, one statement each, so the planner can use the partial indexes.
    listByState: Object.fromEntries(
      Object.values(OperationState).map((state) => [
        state,
        db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM oncely_operations WHERE state = '${state}' ORDER BY created_at, rowid LIMIT ?`),
      ]),
    ) as Record<OperationState, Database.Statement<[number], Row>>,
    // The claim is this one conditional write. Timeline with two processes A and B:
    //   A: UPDATE … WHERE claimed_until IS NULL → 1 row, A owns it until now+ttl
    //   B: UPDATE … WHERE claimed_until <= now  → 0 rows while A's claim runs
    //   A crashes; its claim runs out; B's next UPDATE matches and B resumes the op.
    // SQLite serialises writers, so two UPDATEs can never both match the same row.
    claim: db.prepare<[Record<string, unknown>], { key: string }>(
      `UPDATE oncely_operations SET claim_owner = @owner, claimed_until = @until
       WHERE key = @key AND state = 'pending'
         AND (claimed_until IS NULL OR claimed_until <= @now OR claim_owner = @owner)
       RETURNING key`,
    ),
    release: db.prepare<[string, string]>(
      'UPDATE oncely_operations SET claim_owner = NULL, claimed_until = NULL WHERE key = ? AND claim_owner = ?',
    ),
    prune: db.prepare<[number]>("DELETE FROM oncely_operations WHERE state <> 'pending' AND updated_at < ?"),
  };
}

type Statements = ReturnType<typeof statements>;

/**
 * Creates a journal in a SQLite file (better-sqlite3, WAL). The file is opened on first use;
 * a damaged, locked, foreign or newer-version file makes that call reject with a
 * `JournalError` naming the path and what to do — the file itself is never reset or deleted.
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
  let connection: { readonly db: Database.Database; readonly sql: Statements } | undefined;
  let closed = false;

  // Opened lazily, so creating a client never touches the disk, and retried on the next call
  // after a failure: a lock held by another process is usually temporary.
  const open = (): { readonly db: Database.Database; readonly sql: Statements } => {
    if (closed) throw closedError(path);
    if (connection) return connection;
    let db: Database.Database | undefined;
    try {
      ensureJournalDirectory(path);
      db = new Database(path, { timeout: busyTimeoutMs });
      db.pragma(`synchronous = ${durability === Durability.Power ? 'FULL' : 'NORMAL'}`);
      if (verifyOnOpen) {
        const check = db.pragma('quick_check', { simple: true });
        if (check !== 'ok') throw Object.assign(new Error(`quick_check: ${String(check)}`), { code: 'SQLITE_CORRUPT' });
      }
      // Schema before WAL: switching a foreign file to WAL would already be a write to it.
      const problem = prepareSchema(db);
      if (problem) throw schemaError(path, problem);
      db.pragma('journal_mode = WAL');
      connection = { db, sql: statements(db) };
      return connection;
    } catch (error) {
      db?.close();
      throw journalErrorFrom(error, path, busyTimeoutMs);
    }
  };

  const run = <T>(work: (sql: Statements, db: Database.Database) => T): T => {
    const { db, sql } = open();
    try {
      return work(sql, db);
    } catch (error) {
      throw journalErrorFrom(error, path, busyTimeoutMs);
    }
  };

  const insert = (sql: Statements, operation: NewOperation, now: number): PutOutcome => {
    const row = sql.insert.get({
      key: operation.key,
      method: operation.method,
      url: operation.url,
      headers: JSON.stringify(operation.headers),
      body: operation.body,
      fingerprint: operation.fingerprint,
      createdAt: operation.createdAt ?? now,
      now,
    });
    if (row) return { created: true, record: toRecord(row) };
    return { created: false, record: toRecord(sql.get.get(operation.key) as Row) };
  };

  return {
    kind: 'sqlite',
    path,
    durability,
    async put(operation) {
      return run((sql) => insert(sql, operation, Date.now()));
    },
    async putMany(operations) {
      return run((sql, db) => {
        const now = Date.now();
        return db.transaction(() => operations.map((operation) => insert(sql, operation, now))).immediate();
      });
    },
    async get(key) {
      return run((sql) => {
        const row = sql.get.get(key);
        return row ? toRecord(row) : undefined;
      });
    },
    async update(key, patch: OperationPatch) {
      return run((sql) => {
        const row = sql.update.get({
          key,
          now: Date.now(),
          hasState: patch.state === undefined ? 0 : 1,
          state: patch.state ?? null,
          hasAttempts: patch.attempts === undefined ? 0 : 1,
          attempts: patch.attempts ?? null,
          hasLastStatus: patch.lastStatus === undefined ? 0 : 1,
          lastStatus: patch.lastStatus ?? null,
          hasResult: patch.result === undefined ? 0 : 1,
          result: patch.result == null ? null : JSON.stringify(patch.result),
        });
        return row ? toRecord(row) : undefined;
      });
    },
    async list(filter = {}) {
      return run((sql) => {
        const limit = filter.limit ?? -1;
        const rows = filter.state === undefined ? sql.listAll.all(limit) : sql.listByState[filter.state].all(limit);
        return rows.map(toRecord);
      });
    },
    async claim(key, owner, ttlMs) {
      return run((sql) => {
        const now = Date.now();
        return sql.claim.get({ key, owner, now, until: now + ttlMs }) !== undefined;
      });
    },
    async release(key, owner) {
      run((sql) => sql.release.run(key, owner));
    },
    async prune(olderThanMs) {
      return run((sql) => sql.prune.run(Date.now() - olderThanMs).changes);
    },
    async close() {
      closed = true;
      const current = connection;
      connection = undefined;
      current?.db.close();
    },
  };
}

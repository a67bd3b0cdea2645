/**
 * The SQLite journal's schema, its version history and the checks that refuse a file that is
 * not ours. Kept apart from `sqlite.node.ts` so that the one place that knows every past
 * layout is easy to audit.
 *
 * Version history (`PRAGMA user_version`):
 *
 * | version | change                                                                         |
 * |---------|--------------------------------------------------------------------------------|
 * | 1       | one row per operation; a single process resumed everything it found             |
 * | 2       | `claim_owner` / `claimed_until` so processes sharing a file resume disjoint ops; |
 * |         | the `(state, created_at)` index becomes a partial index on pending rows only     |
 * | 3       | `submitted_at`: `resume()` resends only operations someone asked to send; rows   |
 * |         | written before get `submitted_at = created_at` (see `MIGRATIONS`)                |
 * | 4       | `scope`, and the primary key `(scope, key)`: a client sees its own scope only;   |
 * |         | `claim_process`, so a claim of a dead process is void at once; headers outside   |
 * |         | the allow-list and URL userinfo are scrubbed from existing rows                  |
 * | 5       | `seal` (see `seal.ts`): a row whose key, scope, state, outcome or timestamps were |
 * |         | changed outside oncely is damaged; existing rows are sealed as they are found    |
 *
 * Beside the versions: `oncely_meta`, one row with the journal's random id and the count of
 * operations it has written, for the high-water mark of `sqlite-mark.node.ts`. It is created
 * when missing, whatever the version, and is not a version step: code that does not know it
 * ignores it without harm (its writes only leave the count behind, which is never mistaken for
 * a loss), so an older oncely can still open the file. Its row is one more page written by each
 * commit that journals operations (about 8 µs of CPU per commit, measured on raw SQLite here).
 *
 * Settled rows carry no index on purpose: every index is one more page written per commit,
 * and only `prune()` (rare, maintenance) would use it — it scans instead.
 *
 * Every journal file carries `PRAGMA application_id` = {@link APPLICATION_ID}, so a SQLite
 * database that belongs to something else is recognised and never written to.
 *
 * @module
 * @internal
 */
import { randomUUID } from 'node:crypto';
import type { SqliteDatabase } from '../sqlite/driver.node.js';
import { nodeSeal } from './seal.node.js';
import { COLUMNS, parseRow, type Row } from './sqlite-statements.node.js';
import { JOURNALED_HEADERS } from './types.js';

/** `"oncj"` as a big-endian 32-bit integer: marks a SQLite file as an oncely journal. */
export const APPLICATION_ID = 0x6f6e636a;

/** The schema version this code reads and writes. */
export const SCHEMA_VERSION = 5;

/** Version 1's layout, kept verbatim: the migration test builds its fixture from it. */
export const SCHEMA_V1 = `
  CREATE TABLE oncely_operations (
    key          TEXT PRIMARY KEY NOT NULL,
    method       TEXT NOT NULL,
    url          TEXT NOT NULL,
    headers      TEXT NOT NULL,
    body         TEXT,
    fingerprint  TEXT NOT NULL,
    state        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_status  INTEGER,
    result       TEXT
  );
  CREATE INDEX oncely_operations_state ON oncely_operations (state, created_at);
`;

/**
 * Steps from version `n` to `n + 1`, indexed by `n`. Each runs inside the same immediate
 * transaction as the `user_version` bump, so a crash mid-migration leaves the old version.
 * Exported for the fixture scripts that rebuild a journal of an older version.
 *
 * 2 → 3 marks every existing row submitted (`submitted_at = created_at`): versions 1 and 2
 * resent every pending row on `resume()`, so keeping that for the rows they wrote changes
 * nothing for their users, whereas `null` could strand an operation a caller did ask to send.
 * Settled rows were necessarily sent. Rows written from version 3 on say for themselves.
 *
 * @internal
 */
export const MIGRATIONS: Readonly<Record<number, string | ((db: SqliteDatabase) => void)>> = {
  1: `
    ALTER TABLE oncely_operations ADD COLUMN claim_owner TEXT;
    ALTER TABLE oncely_operations ADD COLUMN claimed_until INTEGER;
    DROP INDEX oncely_operations_state;
    CREATE INDEX oncely_operations_pending ON oncely_operations (created_at) WHERE state = 'pending';
  `,
  2: `
    ALTER TABLE oncely_operations ADD COLUMN submitted_at INTEGER;
    UPDATE oncely_operations SET submitted_at = created_at;
  `,
  3: migrateToScopes,
  4: sealRows,
};

/**
 * 4 → 5: every row that can be read is sealed as it is. This trusts the rows found at the
 * migration — nothing recorded what they were before — and checks every change from then on. A
 * row that cannot be read stays unsealed, and is reported as damaged for what it is.
 *
 * A version step, not a column added on the side: oncely 4 would refuse to open the file
 * (its version is newer) rather than write rows without seals, which would all read as damaged.
 */
function sealRows(db: SqliteDatabase): void {
  db.exec('ALTER TABLE oncely_operations ADD COLUMN seal TEXT');
  const seal = db.prepare<[string, string, string]>('UPDATE oncely_operations SET seal = ? WHERE scope = ? AND key = ?');
  for (const row of db.prepare<[], Row>(`SELECT ${COLUMNS} FROM oncely_operations`).all()) {
    const read = parseRow(row);
    if ('record' in read) seal.run(nodeSeal.sealOf(read.record), row.scope, row.key);
  }
}

/**
 * 3 → 4: SQLite cannot change a primary key in place, so the table is rebuilt. A row's scope is
 * its URL's origin (the scope of a client without a `scope` name at that base URL), so each
 * client keeps seeing the rows it wrote. Headers outside {@link JOURNALED_HEADERS} and userinfo
 * in URLs are dropped on the way: older versions journaled `x-api-key` and the like. A row that
 * cannot be read keeps its text as it was (and is reported as damaged).
 */
function migrateToScopes(db: SqliteDatabase): void {
  const scopeOf = (url: unknown): string => (typeof url === 'string' && URL.canParse(url) ? new URL(url).origin : '');
  const withoutUserinfo = (url: unknown): unknown => {
    if (typeof url !== 'string' || !URL.canParse(url)) return url;
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  };
  const safeHeaders = (text: unknown): unknown => {
    try {
      const headers = JSON.parse(String(text)) as Record<string, unknown>;
      if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return text;
      return JSON.stringify(Object.fromEntries(Object.entries(headers).filter(([name]) => JOURNALED_HEADERS.has(name.toLowerCase()))));
    } catch {
      return text;
    }
  };
  // The old table's pages are zeroed as they are freed, so the scrubbed values leave the file.
  db.pragma('secure_delete = ON');
  db.function('oncely_scope_of', { deterministic: true }, scopeOf);
  db.function('oncely_without_userinfo', { deterministic: true }, (url) => withoutUserinfo(url) as string);
  db.function('oncely_safe_headers', { deterministic: true }, (text) => safeHeaders(text) as string);
  db.exec(`
    CREATE TABLE oncely_operations_v4 (
      scope          TEXT NOT NULL,
      key            TEXT NOT NULL,
      method         TEXT NOT NULL,
      url            TEXT NOT NULL,
      headers        TEXT NOT NULL,
      body           TEXT,
      fingerprint    TEXT NOT NULL,
      state          TEXT NOT NULL,
      created_at     INTEGER NOT NULL,
      updated_at     INTEGER NOT NULL,
      attempts       INTEGER NOT NULL DEFAULT 0,
      last_status    INTEGER,
      result         TEXT,
      claim_owner    TEXT,
      claimed_until  INTEGER,
      submitted_at   INTEGER,
      claim_process  TEXT,
      PRIMARY KEY (scope, key)
    );
    INSERT INTO oncely_operations_v4
      (scope, key, method, url, headers, body, fingerprint, state, created_at, updated_at, attempts, last_status, result, claim_owner, claimed_until, submitted_at)
    SELECT oncely_scope_of(url), key, method, oncely_without_userinfo(url), oncely_safe_headers(headers), body, fingerprint, state,
           created_at, updated_at, attempts, last_status, result, claim_owner, claimed_until, submitted_at
    FROM oncely_operations ORDER BY rowid;
    DROP TABLE oncely_operations;
    ALTER TABLE oncely_operations_v4 RENAME TO oncely_operations;
    CREATE INDEX oncely_operations_pending ON oncely_operations (created_at) WHERE state = 'pending';
  `);
  db.pragma('secure_delete = OFF');
}

/** Why a file cannot be used as a journal; `sqlite.node.ts` turns it into a `JournalError`. */
export interface SchemaProblem {
  readonly kind: 'foreign' | 'newer';
  readonly detail: string;
}

/**
 * Brings the file to {@link SCHEMA_VERSION}: creates the schema in an empty file, migrates an
 * older journal, and reports (without touching anything) a foreign or newer file. Runs under
 * `BEGIN IMMEDIATE`, so two processes opening a fresh file at once create it once.
 */
export function prepareSchema(db: SqliteDatabase): SchemaProblem | undefined {
  // Plain statements, not better-sqlite3's transaction helper: node:sqlite has none.
  db.exec('BEGIN IMMEDIATE');
  try {
    const problem = checkOrCreate(db);
    db.exec('COMMIT');
    return problem;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** {@link prepareSchema}'s work, inside its transaction. */
function checkOrCreate(db: SqliteDatabase): SchemaProblem | undefined {
  const version = db.pragma('user_version', { simple: true }) as number;
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  const tables = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all()
    .map((row) => row.name);

  if (applicationId === 0 && version === 0 && tables.length === 0) {
    db.exec(SCHEMA_V1);
    migrate(db, 1);
    ensureMeta(db);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    return undefined;
  }
  if (applicationId !== APPLICATION_ID || !tables.includes('oncely_operations')) {
    const found = tables.length === 0 ? 'no tables' : `tables ${tables.slice(0, 5).join(', ')}`;
    return { kind: 'foreign', detail: `it is a SQLite database of another application (${found})` };
  }
  if (version > SCHEMA_VERSION) {
    return { kind: 'newer', detail: `its schema version ${version} is newer than the ${SCHEMA_VERSION} this oncely knows` };
  }
  migrate(db, version);
  ensureMeta(db);
  return undefined;
}

/** Creates `oncely_meta` and its one row when missing (see the module comment). */
function ensureMeta(db: SqliteDatabase): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS oncely_meta (
      id                  INTEGER PRIMARY KEY CHECK (id = 1),
      journal_id          TEXT NOT NULL,
      operations_written  INTEGER NOT NULL
    )
  `);
  db.prepare('INSERT OR IGNORE INTO oncely_meta (id, journal_id, operations_written) VALUES (1, ?, 0)').run(randomUUID());
}

function migrate(db: SqliteDatabase, from: number): void {
  for (let version = from; version < SCHEMA_VERSION; version += 1) {
    const step = MIGRATIONS[version];
    if (step === undefined) throw new Error(`no migration from journal schema version ${version}`);
    if (typeof step === 'string') db.exec(step);
    else step(db);
  }
  // Only when it changes: setting it anyway writes the header page into the WAL at every open,
  // over the frames a damaged WAL's report keeps (see sqlite-mark.node.ts).
  if (from !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

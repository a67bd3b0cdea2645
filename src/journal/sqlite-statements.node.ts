/**
 * Every SQL statement of the SQLite journal, prepared once per connection, and the mapping from
 * a row to an {@link OperationRecord}.
 *
 * @module
 * @internal
 */
import type Database from 'better-sqlite3';
import { OperationState, type OperationRecord } from './types.js';

/** A row of `oncely_operations` as better-sqlite3 returns it. */
export interface Row {
  key: string;
  method: string;
  url: string;
  headers: string;
  body: string | null;
  fingerprint: string;
  state: OperationState;
  created_at: number;
  updated_at: number;
  submitted_at: number | null;
  attempts: number;
  last_status: number | null;
  result: string | null;
}

/** The record a row stands for. */
export const toRecord = (row: Row): OperationRecord => ({
  key: row.key,
  method: row.method,
  url: row.url,
  headers: JSON.parse(row.headers) as Record<string, string>,
  body: row.body,
  fingerprint: row.fingerprint,
  state: row.state,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  submittedAt: row.submitted_at,
  attempts: row.attempts,
  lastStatus: row.last_status,
  result: row.result === null ? null : (JSON.parse(row.result) as OperationRecord['result']),
});

const COLUMNS = 'key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at, attempts, last_status, result';

type Named<R = unknown> = Database.Statement<[Record<string, unknown>], R>;

/** The prepared statements of one connection. */
export interface Statements {
  readonly insert: Named;
  readonly get: Database.Statement<[string], Row>;
  readonly update: Named<Row>;
  readonly listAll: Database.Statement<[number], Row>;
  readonly listByState: Readonly<Record<OperationState, Database.Statement<[number], Row>>>;
  readonly claim: Named<{ key: string }>;
  readonly release: Database.Statement<[string, string]>;
  readonly prune: Database.Statement<[number]>;
}

/** Prepares the journal's statements on `db` (the schema must be current). */
export function statements(db: Database.Database): Statements {
  return {
    // No RETURNING: the caller already holds every value of a new row, and RETURNING costs
    // as much as a third of the statement.
    insert: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO oncely_operations (key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at)
       VALUES (@key, @method, @url, @headers, @body, @fingerprint, 'pending', @createdAt, @now, @submittedAt)
       ON CONFLICT (key) DO NOTHING`,
    ),
    get: db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM oncely_operations WHERE key = ?`),
    // One statement, so an update is atomic without a transaction. `has*` flags tell "leave as
    // is" apart from "set to null". Settling clears the claim: a settled op is never resumed.
    update: db.prepare<[Record<string, unknown>], Row>(
      `UPDATE oncely_operations SET
         state = CASE WHEN @hasState THEN @state ELSE state END,
         submitted_at = CASE WHEN @hasSubmittedAt THEN @submittedAt ELSE submitted_at END,
         attempts = CASE WHEN @hasAttempts THEN @attempts ELSE attempts END,
         last_status = CASE WHEN @hasLastStatus THEN @lastStatus ELSE last_status END,
         result = CASE WHEN @hasResult THEN @result ELSE result END,
         updated_at = MAX(@now, updated_at),
         claim_owner = CASE WHEN @hasState AND @state <> 'pending' THEN NULL ELSE claim_owner END,
         claimed_until = CASE WHEN @hasState AND @state <> 'pending' THEN NULL ELSE claimed_until END
       WHERE key = @key RETURNING ${COLUMNS}`,
    ),
    listAll: db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM oncely_operations ORDER BY created_at, rowid LIMIT ?`),
    // Literal states, one statement each, so the planner can use the partial index on pending rows.
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

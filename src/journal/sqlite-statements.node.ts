/**
 * Every SQL statement of the SQLite journal, prepared once per connection, and the mapping from
 * a row to an {@link OperationRecord}.
 *
 * @module
 * @internal
 */
import type { SqliteDatabase, SqliteStatement } from '../sqlite/driver.node.js';
import { nodeSeal } from './seal.node.js';
import { OperationState, type DamagedRecord, type OperationPatch, type OperationRecord, type StoredResult } from './types.js';

/** A row of `oncely_operations` as the SQLite driver returns it. */
export interface Row {
  scope: string;
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
  /** See `seal.ts`; `null` only in a row that could not be read when the column was added. */
  seal: string | null;
}

const STATES: ReadonlySet<string> = new Set(Object.values(OperationState));

const isStringMap = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');

const isResult = (value: unknown): value is StoredResult =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as StoredResult).status === 'number' &&
  isStringMap((value as StoredResult).headers) &&
  typeof (value as StoredResult).body === 'string';

/** The record `row` holds, or why it cannot be read as one; its seal is not checked here. */
export function parseRow(row: Row): { readonly reason: string } | { readonly record: OperationRecord } {
  let headers: unknown;
  let result: unknown = null;
  try {
    headers = JSON.parse(row.headers);
  } catch {
    return { reason: 'its headers are not valid JSON' };
  }
  if (!isStringMap(headers)) return { reason: 'its headers are not a map of strings' };
  if (row.result !== null) {
    try {
      result = JSON.parse(row.result);
    } catch {
      return { reason: 'its stored result is not valid JSON' };
    }
    if (!isResult(result)) return { reason: 'its stored result is not a response' };
  }
  if (!STATES.has(row.state)) return { reason: `its state ${JSON.stringify(row.state)} is unknown` };
  if (!URL.canParse(row.url)) return { reason: `its URL ${JSON.stringify(row.url)} does not parse` };
  if (typeof row.created_at !== 'number' || typeof row.attempts !== 'number') return { reason: 'its timestamps or counters are not numbers' };
  return {
    record: {
      scope: row.scope,
      key: row.key,
      method: row.method,
      url: row.url,
      headers,
      body: row.body,
      fingerprint: row.fingerprint,
      state: row.state,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      submittedAt: row.submitted_at,
      attempts: row.attempts,
      lastStatus: row.last_status,
      result: result as StoredResult | null,
    },
  };
}

/** The record a row stands for, or what is wrong with it: unreadable, or changed since it was sealed. */
export function readRow(row: Row): { readonly record: OperationRecord } | { readonly damaged: DamagedRecord } {
  const read = parseRow(row);
  const reason = 'reason' in read ? read.reason : nodeSeal.sealDamage(read.record, row.seal);
  if (reason !== undefined) return { damaged: { scope: row.scope, key: row.key, reason } };
  return read as { readonly record: OperationRecord };
}

/** Every column a record is read from, and its seal. */
export const COLUMNS = 'scope, key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at, attempts, last_status, result, seal';

type Named<R = unknown> = SqliteStatement<[Record<string, unknown>], R>;

/** Who holds a row's claim. */
export interface Holder {
  state: string;
  claim_owner: string | null;
  claimed_until: number | null;
  claim_process: string | null;
}

/** The prepared statements of one connection. */
export interface Statements {
  readonly insert: Named;
  /**
   * Turns a refused record into a new pending one, `replacesRefused`'s rule in one statement (so
   * it holds without a transaction); same parameters as `insert`.
   */
  readonly replace: Named;
  readonly get: SqliteStatement<[string, string], Row>;
  /** Writes a record read back and patched, with its new seal, over its row (see {@link updateValues}). */
  readonly update: Named;
  /** Rows of one state (or `any`), of one scope (`@scope` null: every scope's). */
  readonly list: Readonly<Record<OperationState | 'any', Named<Row>>>;
  readonly holder: SqliteStatement<[string, string], Holder>;
  readonly claim: Named;
  readonly release: SqliteStatement<[string, string, string]>;
  /** Settled rows last changed before a time: `prune()` deletes those that read back intact. */
  readonly prunable: SqliteStatement<[number], Row>;
  readonly remove: SqliteStatement<[string, string]>;
  /** Adds to the count of operations written (see `sqlite-mark.node.ts`); returns the new count. */
  readonly written: SqliteStatement<[number], { operations_written: number }>;
}

/** `record` with `patch` applied, as `Journal.update` stores it: absent fields left alone, `updatedAt` bumped. */
export function applyPatch(record: OperationRecord, patch: OperationPatch, now: number): OperationRecord {
  const pick = <K extends keyof OperationPatch>(name: K): OperationRecord[K] => (patch[name] === undefined ? record[name] : patch[name]) as OperationRecord[K];
  return {
    ...record,
    state: pick('state'),
    submittedAt: pick('submittedAt'),
    attempts: pick('attempts'),
    lastStatus: pick('lastStatus'),
    result: pick('result'),
    updatedAt: Math.max(now, record.updatedAt),
  };
}

/**
 * The parameters of {@link Statements.update}: the fields a patch may change, the new seal, and
 * whether the patch settles the operation (which clears its claim).
 */
export function updateValues(next: OperationRecord, patch: OperationPatch, seal: string): Record<string, unknown> {
  return {
    scope: next.scope,
    key: next.key,
    state: next.state,
    submittedAt: next.submittedAt,
    attempts: next.attempts,
    lastStatus: next.lastStatus,
    result: next.result === null ? null : JSON.stringify(next.result),
    updatedAt: next.updatedAt,
    seal,
    settles: patch.state !== undefined && patch.state !== OperationState.Pending ? 1 : 0,
  };
}

/** Prepares the journal's statements on `db` (the schema must be current). */
export function statements(db: SqliteDatabase): Statements {
  return {
    // No RETURNING: the caller already holds every value of a new row, and RETURNING costs
    // as much as a third of the statement. A claim asked for (`@claimOwner` not null) is written
    // with the row, so that post() needs no claim transaction of its own.
    insert: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO oncely_operations (scope, key, method, url, headers, body, fingerprint, state, created_at, updated_at, submitted_at,
         claim_owner, claimed_until, claim_process, seal)
       VALUES (@scope, @key, @method, @url, @headers, @body, @fingerprint, 'pending', @createdAt, @now, @submittedAt,
         @claimOwner, @claimedUntil, @claimProcess, @seal)
       ON CONFLICT (scope, key) DO NOTHING`,
    ),
    replace: db.prepare<[Record<string, unknown>]>(
      `UPDATE oncely_operations SET method = @method, url = @url, headers = @headers, body = @body, fingerprint = @fingerprint,
         state = 'pending', created_at = @createdAt, updated_at = @now, submitted_at = @submittedAt,
         attempts = 0, last_status = NULL, result = NULL, claim_owner = @claimOwner, claimed_until = @claimedUntil, claim_process = @claimProcess,
         seal = @seal
       WHERE scope = @scope AND key = @key AND state = 'failed' AND fingerprint <> @fingerprint
         AND (attempts = 0 OR last_status IN (400, 413))`,
    ),
    get: db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM oncely_operations WHERE scope = ? AND key = ?`),
    // Run after the row was read back and its seal checked, in the same transaction: the new
    // seal covers the whole record. Settling clears the claim: a settled op is never resumed.
    update: db.prepare<[Record<string, unknown>]>(
      `UPDATE oncely_operations SET state = @state, submitted_at = @submittedAt, attempts = @attempts, last_status = @lastStatus,
         result = @result, updated_at = @updatedAt, seal = @seal,
         claim_owner = CASE WHEN @settles THEN NULL ELSE claim_owner END,
         claimed_until = CASE WHEN @settles THEN NULL ELSE claimed_until END,
         claim_process = CASE WHEN @settles THEN NULL ELSE claim_process END
       WHERE scope = @scope AND key = @key`,
    ),
    // Literal states, one statement each, so the planner can use the partial index on pending
    // rows. Damaged rows come back too: the journal sorts them out row by row (see readRow).
    list: Object.fromEntries(
      [...Object.values(OperationState), 'any' as const].map((state) => [
        state,
        db.prepare<[Record<string, unknown>], Row>(
          `SELECT ${COLUMNS} FROM oncely_operations
           WHERE ${state === 'any' ? '' : `state = '${state}' AND `}(@scope IS NULL OR scope = @scope)
           ORDER BY created_at, rowid`,
        ),
      ]),
    ) as Record<OperationState | 'any', Named<Row>>,
    // The claim reads its holder and writes itself in one immediate transaction (the journal's
    // write group), so no other process can claim in between. Timeline with processes A and B:
    //   A: holder free → UPDATE: A owns it until now+ttl, recorded with A's process identity
    //   B: holder A, claim running, A alive → refused
    //   A is killed: B's next claim finds A's pid gone (process-owner.node.ts) → B owns it now;
    //   on another host B cannot tell, and waits for A's claim to run out.
    holder: db.prepare<[string, string], Holder>('SELECT state, claim_owner, claimed_until, claim_process FROM oncely_operations WHERE scope = ? AND key = ?'),
    claim: db.prepare<[Record<string, unknown>]>(
      `UPDATE oncely_operations SET claim_owner = @owner, claimed_until = @until, claim_process = @process
       WHERE scope = @scope AND key = @key`,
    ),
    release: db.prepare<[string, string, string]>(
      'UPDATE oncely_operations SET claim_owner = NULL, claimed_until = NULL, claim_process = NULL WHERE scope = ? AND key = ? AND claim_owner = ?',
    ),
    prunable: db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM oncely_operations WHERE state <> 'pending' AND updated_at < ?`),
    remove: db.prepare<[string, string]>('DELETE FROM oncely_operations WHERE scope = ? AND key = ?'),
    written: db.prepare<[number], { operations_written: number }>(
      'UPDATE oncely_meta SET operations_written = operations_written + ? WHERE id = 1 RETURNING operations_written',
    ),
  };
}

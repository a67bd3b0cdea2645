/**
 * Admission on MySQL: the one atomic claim of a key.
 *
 * A plain `INSERT` on the primary key `(client_id, idem_key)`: it succeeds for exactly one of
 * many concurrent admissions; the others fail with ER_DUP_ENTRY and load the row. Not `INSERT
 * IGNORE`, which turns every error of the row (a value too long, a bad charset) into a warning
 * and an owner-less success, nor `ON DUPLICATE KEY UPDATE`, which locks and rewrites the existing
 * row. An admission carrying a first phase or a whole request runs it in the INSERT's
 * transaction: the new row's record lock holds every other admission of the key at its INSERT
 * until the COMMIT (it then fails as a duplicate, and finds the row at its point or finished) or
 * the ROLLBACK (one of them then inserts the key itself). This is the whole request of
 * `transaction: true` (the core hands the transaction over through `admit`): no GET_LOCK, whose
 * lock belongs to the session, not the transaction (a pooled connection carries it past the
 * ROLLBACK unless released by hand), and no `SELECT … FOR UPDATE` of the absent key first, which
 * under REPEATABLE READ locks the gap, and with it the admissions of neighbouring keys.
 *
 * Two InnoDB behaviours are handled: when an owner rolls back, the admissions queued at its row
 * each hold a shared lock and want an exclusive one, and InnoDB kills all but one as deadlock
 * victims (ER_LOCK_DEADLOCK, their transactions already rolled back): they simply admit again.
 * An admission that waited `waitMs` (the connection's `innodb_lock_wait_timeout`, in whole
 * seconds, at least one) answers "in flight, not yet visible".
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { PoolConnection } from 'mysql2/promise';
import type { AdmitInput, AdmitResult, FirstPhase, KeyRow, WholeRequest } from '../store.js';
import { admitWithFirst } from './admit-first.node.js';
import { ErrorNumber, execute, isError, setLimits, type Connections, type Session } from './connection.node.js';
import { keyRowOf, type RawRow } from './rows.js';
import { CLIENT_ID_BYTES, KEY_BYTES, type Statements } from './sql.js';

/** What an admission needs of its store. */
export interface AdmitContext {
  readonly connections: Connections;
  readonly sql: Statements;
  readonly maxResponseBytes: number;
}

/** The row of `(clientId, key)` read on `conn`, or `undefined`. */
export async function loadOn(conn: PoolConnection, sql: Statements, clientId: string, key: string): Promise<KeyRow | undefined> {
  const rows = await execute(conn, sql.load, [clientId, key]);
  const raw = (rows as RawRow[])[0];
  return raw ? keyRowOf(raw) : undefined;
}

/** Refuses a client id or key wider than its column: MySQL would refuse it, or (outside strict mode) cut it, merging two keys into one. */
function checkWidths(input: AdmitInput): void {
  if (Buffer.byteLength(input.clientId) > CLIENT_ID_BYTES) throw new RangeError(`mysqlKeyStore: a client id is at most ${CLIENT_ID_BYTES} UTF-8 bytes`);
  if (Buffer.byteLength(input.key) > KEY_BYTES)
    throw new RangeError(`mysqlKeyStore: a key is at most ${KEY_BYTES} UTF-8 bytes (${JSON.stringify(input.key.slice(0, 40))}…)`);
}

/** One attempt: what it decided, or `'again'` (a deadlock victim, or the row found gone). */
export type Attempt<T> = AdmitResult<T> | 'again';

/** How the INSERT of an admission ended. */
export type Inserted = 'inserted' | 'duplicate' | 'held' | 'again';

/**
 * The INSERT of `input` with its lease `token`, waiting at most `input.waitMs` for another
 * admission's row lock (the connection's lock wait is the server's own again afterwards, and
 * `idleS` stays the idle limit): inserted, a duplicate, still held by another admission, or to try again.
 */
export async function insert(ctx: AdmitContext, conn: PoolConnection, session: Session, input: AdmitInput, token: string, idleS?: number): Promise<Inserted> {
  await setLimits(conn, session, { waitS: input.waitMs === undefined ? undefined : input.waitMs / 1000, idleS });
  try {
    const params = [input.clientId, input.key, input.requestHash, input.endpoint, input.requestBody, token, input.leaseMs, input.ttlMs];
    await execute(conn, ctx.sql.insert, params);
    return 'inserted';
  } catch (error) {
    if (isError(error, ErrorNumber.Duplicate)) return 'duplicate';
    if (isError(error, ErrorNumber.LockWaitTimeout)) return 'held';
    if (isError(error, ErrorNumber.Deadlock)) return 'again';
    throw error;
  } finally {
    await setLimits(conn, session, { idleS });
  }
}

/** The row found by an admission that lost the race, or `'again'` when it is gone already (forgotten). */
export async function found<T>(conn: PoolConnection, ctx: AdmitContext, input: AdmitInput): Promise<Attempt<T>> {
  const row = await loadOn(conn, ctx.sql, input.clientId, input.key);
  return row ? { owned: false, row } : 'again';
}

/** One admission without a first phase: the INSERT alone, in autocommit. */
function admitPlain<T>(ctx: AdmitContext, input: AdmitInput): Promise<Attempt<T>> {
  const token = randomUUID();
  return ctx.connections.use(async (conn, session) => {
    const outcome = await insert(ctx, conn, session, input, token);
    if (outcome === 'duplicate') return found<T>(conn, ctx, input);
    if (outcome === 'held') return { owned: false, row: null };
    if (outcome === 'again') return 'again';
    const lease = { clientId: input.clientId, key: input.key, token };
    return { owned: true, lease, row: (await loadOn(conn, ctx.sql, input.clientId, input.key))! };
  });
}

/**
 * `KeyStore.admit`: inserts the key, or finds it; with `first`, runs it in the INSERT's
 * transaction (see this module's comment, and `./admit-first.node.ts`).
 */
export async function admitOn<T>(ctx: AdmitContext, input: AdmitInput, first?: FirstPhase<T> | WholeRequest<T>): Promise<AdmitResult<T>> {
  checkWidths(input);
  for (;;) {
    const result = first ? await admitWithFirst(ctx, input, first) : await admitPlain<T>(ctx, input);
    if (result !== 'again') return result;
  }
}

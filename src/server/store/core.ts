/**
 * The store core: what every built-in KeyStore does the same way, written once. The two dialects
 * (`sqlite.node.ts`, `postgres.node.ts`) supply their statements (`sqlite-sql.node.ts`,
 * `postgres-sql.node.ts`) and their transport (SQLite's group commit, PostgreSQL's pipelined
 * runner), and build every write from these pieces:
 *
 * - {@link pointOf}: a phase with the mark before it and the point after it, as the one point its
 *   single UPDATE writes (the contract's {@link PhaseCommit});
 * - {@link finalOf}: the response a finish stores, with the size check;
 * - what each `WriteChange` does to the row, as column values: `./write-plan.ts`;
 * - {@link admittedRow}: an owner's admitted row, built without a read (its first phase, or its
 *   whole request, run in the admission's transaction by `admitFirst`, `./write-plan.ts`);
 * - {@link fencedWrite}: lease fencing of a write and its work, the "write has ended" guard and
 *   "did my write land" after a lost answer, over a dialect's {@link FencedSession}.
 *
 * @module
 */
import { ResponseTooLargeError } from '../errors/response-too-large-error.js';
import { LOST, isLeaseLost } from './lease-lost.js';
import type { AdmitInput, Fenced, FinalResponse, FirstPhase, KeyRow, PhaseCommit, StoredResponse, Tx, WholeRequest } from './records.js';

/** The one point a commit writes: where it leaves the row, the lease it asks for, the data it merges. */
export interface FoldedPoint {
  readonly recoveryPoint: string;
  readonly leaseMs: number;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * A phase, the mark before it and the point after it folded into one point: the last point, and
 * every data patch in write order (`before`, `data`, what the work produced, `after`). Keys holding
 * `undefined` are dropped, as JSON drops them from separate writes.
 *
 * @example
 * ```ts
 * pointOf({ recoveryPoint: 'H2_DONE', leaseMs: 1000, before: { recoveryPoint: 'EXT1_DONE', data: { ref: 'r1' } }, after: { recoveryPoint: 'EXT2_SENT' } }, undefined);
 * // { recoveryPoint: 'EXT2_SENT', leaseMs: 1000, data: { ref: 'r1' } }
 * ```
 */
export function pointOf<T>(phase: PhaseCommit<T>, result: T | undefined): FoldedPoint {
  const produced = phase.dataFrom?.(result) ?? undefined;
  const data: Record<string, unknown> = {};
  for (const patch of [phase.before?.data, phase.data, produced, phase.after?.data]) {
    if (patch) for (const [key, value] of Object.entries(patch)) if (value !== undefined) data[key] = value;
  }
  return { recoveryPoint: (phase.after ?? phase).recoveryPoint, leaseMs: phase.leaseMs, data };
}

/**
 * Whether merging `patch` into a row's data changes it (JSON drops keys holding `undefined`).
 *
 * @example
 * ```ts
 * hasData({ risk: undefined }); // false
 * ```
 */
export function hasData(patch: Readonly<Record<string, unknown>> | undefined): boolean {
  if (patch) for (const key of Object.keys(patch)) if (patch[key] !== undefined) return true;
  return false;
}

/**
 * The response a `finish` stores, computed from the work's result when it is a function; throws
 * (committing nothing) when its body is over `maxBytes` UTF-8 bytes: the key table is no blob store.
 *
 * @example
 * ```ts
 * const final = finalOf('sqliteKeyStore', lease.key, 65_536, response, result);
 * ```
 */
export function finalOf<T>(store: string, key: string, maxBytes: number, response: FinalResponse<T>, result: T | undefined): StoredResponse {
  const final = typeof response === 'function' ? response(result) : response;
  const bytes = utf8Bytes(final.body);
  if (bytes > maxBytes) throw new ResponseTooLargeError(store, key, bytes, maxBytes);
  return final;
}

/** The UTF-8 length of `text` (a lone surrogate counts as U+FFFD's 3 bytes), without Node's `Buffer`: this module is on a neutral entry. */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The row an owner's admission wrote, at `nowMs` by the store clock, built without a read.
 *
 * @example
 * ```ts
 * const row = admittedRow(input, now, now + input.ttlMs);
 * ```
 */
export function admittedRow(input: AdmitInput, nowMs: number, expiresAt: number): KeyRow {
  return {
    clientId: input.clientId,
    key: input.key,
    requestHash: input.requestHash,
    endpoint: input.endpoint,
    requestBody: input.requestBody,
    state: 'started',
    recoveryPoint: null,
    data: {},
    response: null,
    leaseRemainingMs: input.leaseMs,
    attempts: 0,
    createdAt: nowMs,
    expiresAt,
  };
}

/**
 * Whether `first` is a {@link WholeRequest}.
 *
 * @example
 * ```ts
 * if (first && isWholeRequest(first)) return finishInAdmission(first);
 * ```
 */
export const isWholeRequest = <T>(first: FirstPhase<T> | WholeRequest<T>): first is WholeRequest<T> => 'response' in first;

/** What a statement of the work asks for: rows changed (`run`), all rows, or the first row. */
export type TxOp = 'run' | 'all' | 'get';

/** Sends one statement of the work; resolves to what `op` asks for. */
export type Send = (op: TxOp, sql: string, params: readonly unknown[]) => Promise<unknown>;

/**
 * The application's {@link Tx} over `send`.
 *
 * @example
 * ```ts
 * const tx = txOver('postgres', (op, sql, params) => session.query(op, sql, params));
 * ```
 */
export function txOver(dialect: Tx['dialect'], send: Send): Tx {
  return {
    dialect,
    run: (sql, params) => send('run', sql, params ?? []) as Promise<number>,
    all: <R extends object>(sql: string, params?: readonly unknown[]) => send('all', sql, params ?? []) as Promise<R[]>,
    get: <R extends object>(sql: string, params?: readonly unknown[]) => send('get', sql, params ?? []) as Promise<R | undefined>,
  };
}

/**
 * One fenced write as a dialect runs it. The work's first statement opens the transaction
 * ({@link FencedSession.open}: the row is fenced by the lease before that statement runs); the
 * write's own statement then goes with the commit, or alone when the work ran none.
 */
export interface FencedSession<S> {
  /** The work's first statement: opens the transaction, fences the row (raising a lost lease), runs it. */
  open: Send;
  /** A later statement of the work, in the open transaction. */
  query: Send;
  /** Writes `statement` and commits the open transaction; a lost lease throws. May complete synchronously. */
  commit(statement: S): Promise<void> | void;
  /** Writes `statement` alone (no work ran a statement); a lost lease throws. May complete synchronously. */
  alone(statement: S): Promise<void> | void;
  /** Undoes the open transaction, if any (called once after any failure). */
  rollback(): Promise<void> | void;
}

/** What a dialect supplies to {@link fencedWrite}. */
export interface FencedWrite<T, S> {
  /** The store's name, for errors. */
  readonly store: string;
  readonly dialect: Tx['dialect'];
  /** The work, if any. */
  readonly work: ((tx: Tx) => Promise<T>) | undefined;
  /** The write's own statement, from the work's result (may throw: nothing is then committed). */
  readonly statement: (result: T | undefined) => S;
  /** After an answer was lost (not refused): whether the write landed anyway (the row says so). */
  readonly landed?: (() => Promise<boolean>) | undefined;
}

/**
 * A write fenced by `lease`, over a dialect's `session`: the work's statements run only while the
 * lease holds the row (the first opens the transaction with the fence), a statement sent after the
 * work returned is refused, the write's own statement commits with them (or alone), and a lost
 * lease, wherever it shows, is `{ ok: false }` with nothing committed.
 *
 * @example
 * ```ts
 * return fencedWrite(session, { store: 'sqliteKeyStore', dialect: 'sqlite', work, statement: (result) => pointOf(phase, result) });
 * ```
 */
export function fencedWrite<T, S>(session: FencedSession<S>, write: FencedWrite<T, S>): Fenced<T | undefined> | Promise<Fenced<T | undefined>> {
  if (write.work) return withWork(session, write, write.work);
  // No work: the write's own statement alone, answered synchronously when the transport is.
  let statement: S;
  try {
    statement = write.statement(undefined);
  } catch (error) {
    return failed(session, error);
  }
  try {
    const written = session.alone(statement);
    if (written)
      return written.then(
        () => ({ ok: true, value: undefined }),
        (error: unknown) => unlessLanded(session, write, error, undefined),
      );
    return { ok: true, value: undefined };
  } catch (error) {
    return unlessLanded(session, write, error, undefined);
  }
}

/** {@link fencedWrite} with work: its first statement opens the fenced transaction. */
async function withWork<T, S>(session: FencedSession<S>, write: FencedWrite<T, S>, work: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>> {
  let opened = false;
  let ended = false;
  const send: Send = (op, sql, params) => {
    // A statement sent after the work returned (an unawaited promise) belongs to no write.
    if (ended) return Promise.reject(new Error(`${write.store}: this write has ended; await every statement before the work returns`));
    if (opened) return session.query(op, sql, params);
    opened = true;
    return session.open(op, sql, params);
  };
  let value: T;
  let statement: S;
  try {
    value = await work(txOver(write.dialect, send));
    ended = true;
    statement = write.statement(value);
  } catch (error) {
    ended = true;
    return failed(session, error);
  }
  try {
    // A synchronous transport (SQLite) completes here without a promise.
    const written = opened ? session.commit(statement) : session.alone(statement);
    if (written) await written;
  } catch (error) {
    return unlessLanded(session, write, error, value);
  }
  return { ok: true, value };
}

/** After the write's own statement failed: one whose answer was lost (not refused) may have committed, and the row says so. */
async function unlessLanded<T, S>(session: FencedSession<S>, write: FencedWrite<T, S>, error: unknown, value: T | undefined): Promise<Fenced<T | undefined>> {
  if (!isLeaseLost(error) && write.landed && (await write.landed())) return { ok: true, value };
  return failed(session, error);
}

/** After a write failed: its transaction is undone; a lost lease is `{ ok: false }`, anything else rethrown. */
async function failed<S>(session: FencedSession<S>, error: unknown): Promise<Fenced<never>> {
  const undone = session.rollback();
  if (undone) await undone;
  if (isLeaseLost(error)) return LOST;
  throw error;
}

/**
 * The KeyStore contract (this folder's entry point). What lives in `src/server/store/`:
 * - `types.ts`: the contract below; `lease-lost.ts`: the lost-lease signal;
 * - `core.ts`: the store core, written once for both built-in stores (fencing, point folding,
 *   the size check, "did my write land");
 * - SQLite: `sqlite.node.ts` (the store), `sqlite-sql.node.ts` (every statement),
 *   `sqlite-connection.node.ts` / `sqlite-checkpointer.node.ts` (its transport: group commit,
 *   checkpoints in a worker), `sqlite-options.node.ts`;
 * - PostgreSQL: `postgres.node.ts` (the store), `postgres-sql.node.ts` (every statement),
 *   `postgres-schema.node.ts` (the table and its functions), `postgres-rows.node.ts` (the row
 *   mapping), its transport (`postgres-fenced.node.ts` over the runner `postgres-transport.node.ts`
 *   describes: pipelined `postgres-runner.node.ts`, or `postgres-pglite.node.ts`),
 *   `postgres-listen.node.ts` (LISTEN/NOTIFY), `postgres-url.node.ts` (URL options).
 *
 * The primitives a storage backend implements so that the neutral handler
 * (`../handler.ts`) and phase runner (`../phases.ts`) can run PROTOCOL.md's state machine. Each
 * primitive is one transaction. A store that implements them, and nothing else, is correct:
 * the contract suite in `test/contract/` and the crash matrix run against such a store.
 *
 * Glossary:
 * - **key row**: one `(client_id, key)`: the request's fingerprint and body, its state, its
 *   recovery point, the data its phases produced, and (once finished) the stored response.
 * - **lease**: a random token with an expiry, held by the one actor allowed to write the row.
 *   Every write after admission is fenced: it changes the row only while `lease_token = $mine`.
 * - **recovery point**: the last step that committed (`H1_DONE`, `EXT1_SENT`, …); a new owner
 *   resumes after it.
 * - **phase**: a step's work (application SQL on a {@link Tx}) committed together with its
 *   recovery point, its data and a refreshed lease.
 * - **lost lease**: a fenced write that found another token; it commits nothing and answers
 *   `{ ok: false }` ({@link Fenced}).
 *
 * Timeline of one request (each arrow is one transaction):
 *
 * ```
 * admit ──► started(lease) ──commitPhase*──► started(point, lease) ──finish──► finished
 *              │    ▲                               │
 *              │    └──────── takeOver ◄────────────┤ lease expired (crash) / released / parked
 *              └── release({forget:true}) deletes a row on which nothing was done yet
 * sweep: started rows with no live lease, due again      reap: rows past their expiry
 * beginRequest ──► (the request's work) ──commit──► finished, in one transaction (nothing visible before its COMMIT)
 * ```
 *
 * Fewer commits per request come from the contract itself, not from a side channel: `admit` may
 * carry the operation's first phase (run in the admission's transaction), `beginRequest` holds a
 * request's whole work and its response in one transaction (one commit in all), and `commitPhase` /
 * `finish` may carry the recovery point before the phase (an outcome mark) and the one after it
 * (`EXTn_SENT`), written by the same UPDATE. The runner (`../phases.ts`) re-commits a mark alone
 * when the phase carrying it fails, so a store needs nothing special for it. How a third party
 * implements these primitives: `docs/key-store.md`; the shared pieces of the built-in stores are
 * in `./core.ts`.
 *
 * Time: lease expiry and `leaseRemainingMs` come from the store's own clock (SQLite: this
 * process; PostgreSQL: `now()`), never from comparing an app clock with a database clock.
 *
 * @module
 */

/** States of a key row. */
export const KeyState = {
  Started: 'started',
  Finished: 'finished',
} as const;

/** One of {@link KeyState}'s values. */
export type KeyState = (typeof KeyState)[keyof typeof KeyState];

/** A response stored as final and replayed verbatim. */
export interface StoredResponse {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The exact body text. */
  readonly body: string;
}

/** A key row as the handler sees it. */
export interface KeyRow {
  readonly clientId: string;
  readonly key: string;
  /** Hex SHA-256 request fingerprint. */
  readonly requestHash: string;
  /** `METHOD path`, e.g. `POST /v1/payments`. */
  readonly endpoint: string;
  /** The request body as received (capped), so the recovery worker can resume without the client. */
  readonly requestBody: string;
  readonly state: KeyState;
  /** The last committed recovery point, `null` before the first phase. */
  readonly recoveryPoint: string | null;
  /** Outputs of committed phases (e.g. the risk result, the rail charge id), merged in order. */
  readonly data: Readonly<Record<string, unknown>>;
  /** The final response, set when `state` is finished. */
  readonly response: StoredResponse | null;
  /** Milliseconds left on the current lease by the store's clock; `null` when no lease is held. */
  readonly leaseRemainingMs: number | null;
  /** Recovery attempts that ended parked (outcome unknown). */
  readonly attempts: number;
  /** Epoch ms (store clock) of admission. */
  readonly createdAt: number;
  /** Epoch ms (store clock) after which the row may be reaped. */
  readonly expiresAt: number;
}

/** Proof of ownership: every write after admission must present it. */
export interface Lease {
  readonly clientId: string;
  readonly key: string;
  /** Random, unguessable; replaced on every takeover. */
  readonly token: string;
}

/**
 * A transaction handle for application work that must commit atomically with a phase
 * (the reference app's payments, ledger, rail and inbox tables). SQL is written with
 * `$1, $2, …` placeholders in the subset SQLite and PostgreSQL share; each store adapts it.
 */
export interface Tx {
  readonly dialect: 'sqlite' | 'postgres';
  /** Runs a statement; resolves to the number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /** Runs a query; resolves to its rows. */
  all<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a query; resolves to its first row or `undefined`. */
  get<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
}

/** Application tables created next to the key table, one DDL script per dialect. */
export interface AppSchema {
  readonly sqlite: string;
  readonly postgres: string;
}

/** Input of {@link KeyStore.admit}. */
export interface AdmitInput {
  readonly clientId: string;
  readonly key: string;
  readonly requestHash: string;
  readonly endpoint: string;
  readonly requestBody: string;
  readonly leaseMs: number;
  readonly ttlMs: number;
  /**
   * How long this admission may wait for another admission of the key whose transaction is still
   * open (one carrying a {@link WholeRequest} holds the key until its work ends). Past it, `admit`
   * answers `{ owned: false, row: null }`. A store whose admissions never hold the key longer than
   * one short transaction may ignore it. Absent: no bound but the store's own statement timeout.
   */
  readonly waitMs?: number | undefined;
}

/**
 * What {@link KeyStore.admit} found: the caller owns the new row (with a fresh lease), or the
 * existing row. An owner that handed over a first phase gets `first` (its work's result), and a
 * `row` already at that phase's last point with its data.
 */
export type AdmitResult<T = unknown> =
  | { readonly owned: true; readonly lease: Lease; readonly row: KeyRow; readonly first?: { readonly value: T | undefined } }
  | { readonly owned: false; readonly row: KeyRow }
  /** Another admission of the key is still open in a transaction (see {@link AdmitInput.waitMs}): in flight, its row not yet visible. */
  | { readonly owned: false; readonly row: null };

/** A recovery point written by a commit, with the data it merges into the row. */
export interface PointWrite {
  readonly recoveryPoint: string;
  /** Merged into the row's `data`. */
  readonly data?: Readonly<Record<string, unknown>>;
}

/**
 * A phase to commit under a lease: its recovery point and data, a refreshed lease, and optionally
 * the point before it (an outcome mark, `EXTn_DONE`) and the point after it (`EXTn_SENT`).
 *
 * A store writes the three as ONE: the row is left at the last point given, with the data of
 * `before`, `data`, `dataFrom(result)` and `after` merged in that order (one UPDATE). Nothing
 * else is asked of it: if the commit fails, nothing of it is kept, and the runner commits the
 * mark again on its own.
 */
export interface PhaseCommit<T = unknown> extends PointWrite {
  /**
   * Data computed by the phase's own work: called with the work's result inside the transaction
   * and merged into `data` after {@link PointWrite.data}.
   */
  readonly dataFrom?: (result: T | undefined) => Readonly<Record<string, unknown>> | undefined | void;
  /** The refreshed lease length. */
  readonly leaseMs: number;
  /** The previous step's outcome mark, written with this commit, before it. */
  readonly before?: PointWrite | undefined;
  /** The point written with this commit, after it: the row is left there. */
  readonly after?: PointWrite | undefined;
}

/** An operation's first phase handed to {@link KeyStore.admit}: run in the admission's own transaction. */
export interface FirstPhase<T = unknown> {
  readonly phase: PhaseCommit<T>;
  readonly work: (tx: Tx) => Promise<T>;
}

/**
 * A request's whole work as one call (the reference handler's operations without an external
 * call), run in the transaction of {@link KeyStore.beginRequest} by `runWholeRequest`
 * (`./request-transaction.ts`): the admission, the work and the stored response commit as ONE
 * transaction, and the owner gets its row finished.
 */
export interface WholeRequest<T = unknown> {
  /** The request's work, given the key's row as admitted. */
  readonly work: (tx: Tx, admitted: KeyRow) => Promise<T>;
  /** The response to store, from the work's result, inside the transaction (the store's size cap applies). */
  readonly response: (result: T) => StoredResponse;
}

/**
 * The final response of {@link KeyStore.finish}: given, or computed from the work's result inside
 * the transaction (the final step returns the response it wants stored).
 */
export type FinalResponse<T = unknown> = StoredResponse | ((result: T | undefined) => StoredResponse);

/**
 * A fenced write's result: `ok: false` means the lease was lost and the write committed nothing.
 */
export type Fenced<T> = { readonly ok: true; readonly value: T } | { readonly ok: false };

export { WatchEvent } from './watch-event.js';
import type { WatchEvent } from './watch-event.js';
import type { BeganRequest } from './request-transaction.js';
export type { BeganRequest, RequestTransaction } from './request-transaction.js';

/** The primitives a backend implements. */
export interface KeyStore {
  readonly dialect: 'sqlite' | 'postgres';
  /** Creates or upgrades the key table and the app's tables; safe when several processes start at once. */
  migrate(app?: AppSchema): Promise<void>;
  /**
   * `INSERT … ON CONFLICT DO NOTHING RETURNING`: a row back means this caller owns the request
   * (with a fresh lease); otherwise the existing row is loaded and returned. Atomic: of many
   * concurrent admissions of one key, exactly one is `owned`.
   *
   * With `first`, an owner runs that phase's work and writes it (as {@link KeyStore.commitPhase}
   * would) in the admission's own transaction: a duplicate never sees the row before it. If the
   * work throws, nothing is kept, not even the key, and `admit` rejects with the work's error.
   */
  admit<T = unknown>(input: AdmitInput, first?: FirstPhase<T>): Promise<AdmitResult<T>>;
  /**
   * Admits a request whose whole work runs in one transaction with its key (the middleware's
   * `transaction: true`): owned, the key's transaction is left open and handed over
   * ({@link RequestTransaction}: the request's statements, then `commit` with the response, or
   * `rollback`); nothing of it, the key included, is visible to anyone before that COMMIT. While
   * it is open the key is the owner's alone: a concurrent admission of it waits (up to its
   * {@link AdmitInput.waitMs}) for the COMMIT (and finds the finished row) or the rollback (and
   * may own the key itself). A crash rolls everything back. Not owned: what was found, as `admit`
   * answers it.
   */
  beginRequest(input: AdmitInput): Promise<BeganRequest>;
  /** The row, or `undefined`. */
  load(clientId: string, key: string): Promise<KeyRow | undefined>;
  /**
   * One conditional `UPDATE … WHERE state='started' AND (no lease OR lease expired)` that
   * writes a fresh random token. `null` when someone else holds a live lease or it is finished.
   */
  takeOver(clientId: string, key: string, leaseMs: number): Promise<Lease | null>;
  /**
   * Work + recovery point(s) + data + lease refresh in one transaction, fenced by the token: the
   * work's statements run only while the lease holds the row, and a work that throws commits
   * nothing (the call rejects with its error). `ok: false` when the lease was lost. See
   * {@link PhaseCommit} for the points before and after.
   */
  commitPhase<T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>>;
  /**
   * Work + `state=finished` + the response + lease cleared, in one transaction, fenced. A function
   * `response` is called with the work's result inside the transaction. `before` (an outcome mark)
   * is written by the same UPDATE: the row keeps its point and data.
   */
  finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, before?: PointWrite): Promise<Fenced<T | undefined>>;
  /**
   * Gives the request up after a transient failure. `forget: true` deletes the row (allowed only
   * while no recovery point is committed); otherwise the lease is cleared and the row stays resumable.
   * Fenced by the token: after it rejected, the front end calls it again with the same lease until
   * it resolves, and a call that finds the row no longer under that token changes nothing.
   */
  release(lease: Lease, options: { readonly forget: boolean }): Promise<boolean>;
  /** Outcome unknown: clears the lease, counts the attempt, and holds the row from sweeps for `retryAfterMs`. */
  park(lease: Lease, options: { readonly retryAfterMs: number }): Promise<boolean>;
  /** Started rows with no live lease and due for another attempt, oldest first. */
  sweep(limit: number): Promise<KeyRow[]>;
  /** Deletes up to `batchSize` finished rows past `expiresAt`; resolves to the count removed. */
  reap(batchSize: number): Promise<number>;
  /**
   * Optional: tells `listener` when the key's owner lets go of it on any instance sharing the
   * store, so that a duplicate waiting for the original's answer is woken by the store instead of
   * polling the row. Resolves (to the function that stops the watch) once the store is listening:
   * every end committed after that is reported; one committed before is not, so the caller loads
   * the row once after it resolves. Rejects when the store cannot listen now (the caller polls).
   * Holds no connection per watch. A store without it is polled (see `../in-flight.ts`).
   * PostgreSQL over a `pg` pool: `LISTEN/NOTIFY`, one listening connection per store.
   */
  watch?(clientId: string, key: string, listener: (event: WatchEvent) => void): Promise<() => void>;
  /** A plain application transaction (the inbox, reads that must be consistent). */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The KeyStore contract (this folder's entry point). What lives in `src/server/store/`:
 * - `types.ts`: the contract below, over the records of `records.ts`; `lease-lost.ts`: the lost-lease signal;
 * - `request-transaction.ts`: a whole request's open transaction (`beginRequest`) run, or handed over;
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
 * the contract suite in the repository's
 * [`test/contract/`](https://github.com/oncely/oncely/tree/main/test/contract) and the crash
 * matrix run against such a store.
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

export * from './records.js';
export { WatchEvent } from './watch-event.js';
import type { WatchEvent } from './watch-event.js';
import type {
  AdmitInput,
  AdmitResult,
  AppSchema,
  BeganRequest,
  Fenced,
  FinalResponse,
  FirstPhase,
  KeyRow,
  Lease,
  PhaseCommit,
  PointWrite,
  Tx,
} from './records.js';

/** The primitives a backend implements. */
export interface KeyStore {
  readonly dialect: 'sqlite' | 'postgres';
  /** Optional: the largest response body this store keeps (a larger one is a `ResponseTooLargeError`); the middleware's cap is checked against it at construction. */
  readonly maxResponseBytes?: number;
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

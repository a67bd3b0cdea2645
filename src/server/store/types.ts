/**
 * The KeyStore contract (this folder's entry point). What lives in `src/server/store/`:
 * - `types.ts`: the contract below, over the records of `records.ts`; `lease-lost.ts`: the lost-lease signal;
 * - `request-transaction.ts`: a whole request's open transaction (`beginRequest`) run, or handed over;
 * - `core.ts`: the store core, written once for both built-in stores (fencing, point folding,
 *   the size check, "did my write land"); `write-plan.ts`: what each fenced write does to the row,
 *   as column values (`planWrite`), for every store; `app-schema.ts`: the app's DDL of a dialect;
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
 * the contract suites (`../testing/`, shipped as `oncely/server/testing`) and the crash matrix
 * run against such a store.
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
 * admit ──► started(lease) ──write(phase)*──► started(point, lease) ──write(finish)──► finished
 *              │    ▲                                │
 *              │    └──────── takeOver ◄─────────────┤ lease expired (crash) / write(release) / write(park)
 *              └── write(release, forget) deletes a row on which nothing was done yet
 * sweep: started rows with no live lease, due again      reap: rows past their expiry
 * beginRequest ──► (the request's work) ──commit──► finished, in one transaction (nothing visible before its COMMIT)
 * ```
 *
 * Fewer commits per request come from the contract itself, not from a side channel: `admit` may
 * carry the operation's first phase (run in the admission's transaction), `beginRequest` holds a
 * request's whole work and its response in one transaction (one commit in all), and a phase or a
 * finish {@link KeyStore.write} may carry the recovery point before the phase (an outcome mark) and the one after it
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
import type { AdmitInput, AdmitResult, AppSchema, BeganRequest, Fenced, FirstPhase, KeyRow, Lease, Tx, WholeRequest, WriteChange } from './records.js';

/**
 * The primitives a backend implements: six required members, the rest optional. Why each exists:
 *
 * | member | why it exists (what would break without it) |
 * |---|---|
 * | `dialect` | names the SQL a {@link Tx} speaks, so an app's steps and {@link AppSchema} pick theirs |
 * | `admit` | the one atomic claim: of many concurrent admissions of a key, exactly one owns it |
 * | `load` | a duplicate reads the row it waits for (its point, its stored response) |
 * | `takeOver` | a crashed or released owner's row is resumed by another, under a fresh token |
 * | `write` | every change after admission, fenced by the token, committed with the step's work |
 * | `transaction` | the app's own consistent reads and writes (the inbox) on the same database |
 *
 * Optional, and what is lost without each: `migrate` (the caller creates the tables itself),
 * `beginRequest` (the core admits a whole request through `admit` with a {@link WholeRequest}),
 * `sweep` (no recovery worker: a stuck key resumes only when its client retries), `reap` (no
 * expiry: finished keys stay until deleted by hand), `watch` (duplicates poll), `close`.
 */
export interface KeyStore {
  /** The SQL dialect of its {@link Tx} (`'sqlite'`, `'postgres'`, `'mysql'`, …): an app's steps and schema are written per dialect. */
  readonly dialect: string;
  /**
   * `INSERT … ON CONFLICT DO NOTHING RETURNING`: a row back means this caller owns the request
   * (with a fresh lease); otherwise the existing row is loaded and returned. Atomic: of many
   * concurrent admissions of one key, exactly one is `owned`.
   *
   * With `first`, an owner runs its work in the admission's own transaction and writes what it
   * produced: a {@link FirstPhase}'s point (as a `'phase'` {@link KeyStore.write} would), or a
   * {@link WholeRequest}'s response (the row finished). A duplicate never sees the row before. If
   * the work throws, nothing is kept, not even the key, and `admit` rejects with the work's error.
   * `admitFirst` (`oncely/server/store`) does this part for a store.
   */
  admit<T = unknown>(input: AdmitInput, first?: FirstPhase<T> | WholeRequest<T>): Promise<AdmitResult<T>>;
  /** The row, or `undefined`. */
  load(clientId: string, key: string): Promise<KeyRow | undefined>;
  /**
   * One conditional `UPDATE … WHERE state='started' AND (no lease OR lease expired)` that
   * writes a fresh random token. `null` when someone else holds a live lease or it is finished.
   */
  takeOver(clientId: string, key: string, leaseMs: number): Promise<Lease | null>;
  /**
   * THE fenced write: `work` (the step's application statements, if any) and the `change` to the
   * row ({@link WriteChange}: a phase's points, the finish, a release, a park) in ONE transaction,
   * fenced by the lease token. The work's statements run only while the lease holds the row; a
   * work that throws commits nothing (the call rejects with its error). `ok: false` when the
   * lease was lost: nothing committed. `planWrite` (`oncely/server/store`) turns the change and
   * the work's result into the row's new column values, so a store writes one fenced UPDATE (or
   * DELETE). A release or park is retried by the front end until it resolves: one that finds the
   * row no longer under that token changes nothing.
   */
  write<T>(lease: Lease, change: WriteChange<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>>;
  /** A plain application transaction (the inbox, reads that must be consistent), on the database that holds the key table. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Optional: creates or upgrades the key table and the app's tables (its dialect's script of `app`); safe when several processes start at once. */
  migrate?(app?: AppSchema): Promise<void>;
  /**
   * Optional: admits a request whose whole work runs in one transaction with its key (the
   * middleware's `transaction: true`): owned, the key's transaction is left open and handed over
   * ({@link RequestTransaction}: the request's statements, then `commit` with the response, or
   * `rollback`); nothing of it, the key included, is visible to anyone before that COMMIT. While
   * it is open the key is the owner's alone: a concurrent admission of it waits (up to its
   * {@link AdmitInput.waitMs}) for the COMMIT (and finds the finished row) or the rollback (and
   * may own the key itself). A crash rolls everything back. Not owned: what was found, as `admit`
   * answers it. Absent: the core runs it as `admit` with a {@link WholeRequest} (`beginRequestOf`).
   */
  beginRequest?(input: AdmitInput): Promise<BeganRequest>;
  /** Optional: started rows with no live lease and due for another attempt, oldest first. Absent: no recovery worker. */
  sweep?(limit: number): Promise<KeyRow[]>;
  /** Optional: deletes up to `batchSize` finished rows past `expiresAt`; resolves to the count removed. Absent: no reaper. */
  reap?(batchSize: number): Promise<number>;
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
  /** Optional: ends the store's connections. */
  close?(): Promise<void>;
}

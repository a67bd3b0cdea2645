/**
 * The KeyStore contract: the primitives a storage backend implements so that the neutral handler
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
 * ```
 *
 * A built-in store may also commit several of these transactions in fewer round trips; that
 * stays inside the store and the runner's commit layer (`../commits.ts`) and changes nothing a
 * caller of these primitives sees.
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
}

/** What {@link KeyStore.admit} found: the caller owns the new row (with a fresh lease), or the existing row. */
export type AdmitResult =
  | { readonly owned: true; readonly lease: Lease; readonly row: KeyRow }
  | { readonly owned: false; readonly row: KeyRow };

/** A recovery point to commit under a lease, with the phase's data and a refreshed lease. */
export interface PhaseCommit<T = unknown> {
  readonly recoveryPoint: string;
  /** Merged into the row's `data`. */
  readonly data?: Readonly<Record<string, unknown>>;
  /**
   * Data computed by the phase's own work: called with the work's result inside the transaction
   * and merged into `data` after {@link PhaseCommit.data}.
   */
  readonly dataFrom?: (result: T | undefined) => Readonly<Record<string, unknown>> | undefined | void;
  /** The refreshed lease length. */
  readonly leaseMs: number;
  /**
   * A hint a store may ignore (committing durably is always correct). `false` when a later commit
   * of this attempt is sure to be durable before anything irreversible or final follows from this
   * one (an external call, a stored response): the store may then commit without waiting for its
   * log to reach the disk (PostgreSQL: `synchronous_commit = off`). Its log is written in order,
   * so a crash that loses this commit loses every later one too: the attempt never got this far.
   * @default true
   */
  readonly durable?: boolean;
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

/** What {@link KeyStore.watch} tells a watcher. */
export const WatchEvent = {
  /**
   * The key's owner let go of it, on this instance or another: it finished, released or parked
   * the row (or deleted it). Load the row to see what it is now; a rare event may be spurious.
   */
  Ended: 'ended',
  /**
   * The store stopped listening (its connection dropped): ends are no longer reported to this
   * watcher, which must find out another way (poll the row).
   */
  Lost: 'lost',
} as const;

/** One of {@link WatchEvent}'s values. */
export type WatchEvent = (typeof WatchEvent)[keyof typeof WatchEvent];

/** The primitives a backend implements. */
export interface KeyStore {
  readonly dialect: 'sqlite' | 'postgres';
  /** Creates or upgrades the key table and the app's tables; safe when several processes start at once. */
  migrate(app?: AppSchema): Promise<void>;
  /**
   * `INSERT … ON CONFLICT DO NOTHING RETURNING`: a row back means this caller owns the request
   * (with a fresh lease); otherwise the existing row is loaded and returned. Atomic: of many
   * concurrent admissions of one key, exactly one is `owned`.
   */
  admit(input: AdmitInput): Promise<AdmitResult>;
  /** The row, or `undefined`. */
  load(clientId: string, key: string): Promise<KeyRow | undefined>;
  /**
   * One conditional `UPDATE … WHERE state='started' AND (no lease OR lease expired)` that
   * writes a fresh random token. `null` when someone else holds a live lease or it is finished.
   */
  takeOver(clientId: string, key: string, leaseMs: number): Promise<Lease | null>;
  /**
   * Work + recovery point + data + lease refresh in one transaction, fenced by the token: the
   * work's statements run only while the lease holds the row, and a work that throws commits
   * nothing (the call rejects with its error). `ok: false` when the lease was lost.
   */
  commitPhase<T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>>;
  /**
   * Work + `state=finished` + the response + lease cleared, in one transaction, fenced. A function
   * `response` is called with the work's result inside the transaction.
   */
  finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>>;
  /**
   * Gives the request up after a transient failure. `forget: true` deletes the row (allowed only
   * while no recovery point is committed); otherwise the lease is cleared and the row stays resumable.
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

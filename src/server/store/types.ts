/**
 * The KeyStore contract: the few primitives a storage backend implements so that the neutral
 * handler (`../handler.ts`) can run PROTOCOL.md's state machine. Each backend owns its SQL in
 * one file (`sqlite.node.ts`, `postgres.node.ts`); the neutral code never builds SQL.
 *
 * Row lifecycle (every write after admission is fenced by `lease_token = $mine`):
 *
 * ```
 * admit ──► started(lease) ──commitPhase*──► started(point, lease) ──finish──► finished
 *              │    ▲                               │
 *              │    └──────── takeOver ◄────────────┤ lease expired (crash) / released / parked
 *              └── release({forget:true}) deletes a row on which nothing was done yet
 * ```
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

/**
 * A local phase that {@link KeyStore.admit} runs in the admission's own transaction when the
 * caller wins the key: the `INSERT`, the phase's work and its recovery point commit together, or
 * nothing does. A first execution then costs one commit less, and never leaves a key row with no
 * recovery point behind (a crash before that commit leaves nothing, as if the request never came).
 */
export interface FirstPhase<T = unknown> {
  readonly commit: PhaseCommit<T>;
  readonly work: (tx: Tx) => Promise<T>;
}

/**
 * What {@link KeyStore.admit} found. An owner admitted with a {@link FirstPhase} gets `first`
 * (the work's result) and a `row` already at that phase's recovery point.
 */
export type AdmitResult<T = unknown> =
  | {
      readonly owned: true;
      readonly lease: Lease;
      readonly row: KeyRow;
      /** The first phase's result; `next`: whether its {@link PhaseCommit.next} committed too (the row still shows the phase's point). */
      readonly first?: { readonly value: T | undefined; readonly next?: boolean };
    }
  | { readonly owned: false; readonly row: KeyRow };

/** A recovery point committed with no work of its own: `EXTn_SENT`, or an outcome `EXTn_DONE`. */
export interface PointCommit {
  readonly recoveryPoint: string;
  /** Merged into the row's `data`. */
  readonly data?: Readonly<Record<string, unknown>>;
  /** The refreshed lease length. */
  readonly leaseMs: number;
  /**
   * `false` when a later commit of this attempt is sure to be durable before anything
   * irreversible or final follows from this one (an external call, a stored response): then the
   * store may commit without waiting for its log to reach the disk (PostgreSQL:
   * `synchronous_commit = off`). Its log is written in order, so a crash that loses this commit
   * loses every later one too — the attempt simply never got this far. `EXTn_SENT` is always
   * durable: the call follows.
   * @default true
   */
  readonly durable?: boolean;
}

/**
 * An outcome mark (`EXTn_DONE`) committed before the phase that follows it, and kept when that
 * phase fails ({@link PhaseCommit.prior}, {@link FinishOptions.prior}).
 */
export interface PriorCommit extends PointCommit {
  /**
   * Runs once the mark has committed and before anything after it commits (the crash-fault hook;
   * it may use the store). A mark with a hook is committed on its own, before the phase starts.
   */
  readonly committed?: () => void | Promise<void>;
}

/** A phase to commit under a lease. */
export interface PhaseCommit<T = unknown> extends PointCommit {
  /**
   * Data computed by the phase's own work (a local step returns what it produced): called with
   * the work's result inside the transaction and merged into `data` after {@link PointCommit.data}.
   */
  readonly dataFrom?: (result: T | undefined) => Readonly<Record<string, unknown>> | undefined | void;
  /**
   * The previous step's outcome mark, committed first. A store may send it with the phase's first
   * round trip (PostgreSQL, as a transaction of its own) or write it in the phase's turn of its
   * group commit (SQLite, outside the phase's savepoint); either way it stays committed when the
   * work then fails. When the work runs no statement, both stores write it with the phase's own
   * point, in one UPDATE. A mark the lease no longer allows makes the whole call `ok: false`.
   */
  readonly prior?: PriorCommit | undefined;
  /**
   * A point to commit right after this phase: `EXTn_SENT` when an external call follows. Both
   * stores write it as the phase's own point (the same UPDATE, one commit, durable when it is):
   * nothing runs between the phase and it, so no reader needs to see the phase's point alone. If
   * that write fails, the phase fails with it. The result's `next` says whether it committed; a
   * store that commits it separately may answer `false` with the phase committed, and the caller
   * then commits the point on its own.
   */
  readonly next?: PointCommit | undefined;
}

/** Options of {@link KeyStore.finish}. */
export interface FinishOptions {
  /** As {@link PhaseCommit.prior}: the last step's outcome mark, committed first and kept if the finish fails. */
  readonly prior?: PriorCommit | undefined;
}

/**
 * The final response of {@link KeyStore.finish}: given, or computed from the work's result inside
 * the transaction (the final step returns the response it wants stored).
 */
export type FinalResponse<T = unknown> = StoredResponse | ((result: T | undefined) => StoredResponse);

/**
 * A fenced write's result: `ok: false` means the lease was lost and the phase committed nothing
 * (its {@link PhaseCommit.prior} may have). `next` is present when {@link PhaseCommit.next} was asked for.
 */
export type Fenced<T> = { readonly ok: true; readonly value: T; readonly next?: boolean } | { readonly ok: false };

/** The primitives a backend implements. */
export interface KeyStore {
  readonly dialect: 'sqlite' | 'postgres';
  /** Creates or upgrades the key table and the app's tables; safe when several processes start at once. */
  migrate(app?: AppSchema): Promise<void>;
  /**
   * `INSERT … ON CONFLICT DO NOTHING RETURNING`: a row back means this caller owns the request
   * (with a fresh lease); otherwise the existing row is loaded and returned. With `first`, the
   * owner also runs that phase in the same transaction (see {@link FirstPhase}); if its work
   * throws, nothing is stored (not even the key) and `admit` rejects with the work's error.
   */
  admit<T = unknown>(input: AdmitInput, first?: FirstPhase<T>): Promise<AdmitResult<T>>;
  /** The row, or `undefined`. */
  load(clientId: string, key: string): Promise<KeyRow | undefined>;
  /**
   * One conditional `UPDATE … WHERE state='started' AND (no lease OR lease expired)` that
   * writes a fresh random token. `null` when someone else holds a live lease or it is finished.
   */
  takeOver(clientId: string, key: string, leaseMs: number): Promise<Lease | null>;
  /** Work + recovery point + data + lease refresh in one transaction, fenced by the token. */
  commitPhase<T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>>;
  /**
   * Work + `state=finished` + the response + lease cleared, in one transaction, fenced. A function
   * `response` is called with the work's result inside the transaction.
   */
  finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, options?: FinishOptions): Promise<Fenced<T | undefined>>;
  /**
   * Gives the request up after a transient failure. `forget: true` deletes the row (allowed only
   * while no recovery point is committed); otherwise the lease is cleared and the row stays resumable.
   */
  release(lease: Lease, options: { readonly forget: boolean }): Promise<boolean>;
  /** Outcome unknown: clears the lease, counts the attempt, and holds the row from sweeps for `retryAfterMs`. */
  park(lease: Lease, options: { readonly retryAfterMs: number }): Promise<boolean>;
  /** Started rows with no live lease and due for another attempt, oldest first. */
  sweep(limit: number): Promise<KeyRow[]>;
  /** Deletes (or drops partitions of) rows past `expiresAt`; resolves to the count removed. */
  reap(batchSize: number): Promise<number>;
  /** A plain application transaction (the inbox, reads that must be consistent). */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The records the KeyStore contract (`./types.ts`) passes: a key's row and its lease, the input of
 * an admission and what it found, the phases and their points, a stored response, the
 * application's transaction, and a whole request's open transaction. Kept apart from the contract
 * so that the helpers every store shares (`./core.ts`, `./request-transaction.ts`) import them
 * without importing the contract's module, which imports nothing of theirs either.
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
  /** The store's `dialect`: which SQL its statements speak (`'sqlite'`, `'postgres'`, `'mysql'`, …). */
  readonly dialect: string;
  /**
   * Runs a statement; resolves to the number of rows it affected as the database counts them
   * (PostgreSQL and SQLite: rows written; MySQL: rows matched or changed, as the connection's
   * `CLIENT_FOUND_ROWS` says): an app that needs one meaning asks with `RETURNING` or a `SELECT`.
   */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /** Runs a query; resolves to its rows. */
  all<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a query; resolves to its first row or `undefined`. */
  get<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
}

/**
 * Application tables created next to the key table, one DDL script per dialect, keyed by
 * {@link KeyStore.dialect} (`{ sqlite: '…', postgres: '…', mysql: '…' }`). A store migrates the
 * script of its own dialect, and refuses a schema that has none for it.
 */
export type AppSchema = Readonly<Record<string, string>>;

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
   * one short transaction may ignore it; one whose lock waits have a coarser unit (MySQL: whole
   * seconds) rounds it up. Absent: no bound but the store's own statement timeout.
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
 * The final response of a finish ({@link WriteChange}): given, or computed from the work's result inside
 * the transaction (the final step returns the response it wants stored).
 */
export type FinalResponse<T = unknown> = StoredResponse | ((result: T | undefined) => StoredResponse);

/**
 * What one fenced {@link KeyStore.write} changes on the key row, `work` (if any) committed with it:
 *
 * | `kind` | the row afterwards | lease |
 * |---|---|---|
 * | `'phase'` | at the last point given (`before`, the phase's, `after`), every data patch merged in order | refreshed for `leaseMs` |
 * | `'finish'` | `finished` with the response (and the `before` mark, if any) | cleared |
 * | `'release'` | unchanged (`forget: true` deletes a row with no recovery point yet) | cleared |
 * | `'park'` | unchanged, one more attempt, held from sweeps for `retryAfterMs` | cleared |
 *
 * `work` goes with `'phase'` and `'finish'`; the front ends never pass one with `'release'` or `'park'`, and a store may refuse it.
 * A store turns a change into the row's new column values with `planWrite` (`oncely/server/store`).
 */
export type WriteChange<T = unknown> =
  | ({ readonly kind: 'phase' } & PhaseCommit<T>)
  | {
      readonly kind: 'finish';
      /** Given, or computed from the work's result inside the transaction (the response the final step returns). */
      readonly response: StoredResponse | ((result: T | undefined) => StoredResponse);
      readonly before?: PointWrite | undefined;
    }
  | { readonly kind: 'release'; readonly forget: boolean }
  | { readonly kind: 'park'; readonly retryAfterMs: number };

/**
 * A fenced write's result: `ok: false` means the lease was lost and the write committed nothing.
 */
export type Fenced<T> = { readonly ok: true; readonly value: T } | { readonly ok: false };

/** The open transaction of a whole request; handed over by `KeyStore.beginRequest` (see `./request-transaction.ts`). Each method may be called once. */
export interface RequestTransaction {
  /** Where the request's own statements run. */
  readonly tx: Tx;
  /**
   * Stores `response` as the key's final answer and commits it with the request's writes. A
   * rejection means nothing committed (a lost answer to the COMMIT is resolved by the store).
   * The store's size cap applies: a response over it rejects and rolls back.
   */
  commit(response: StoredResponse): Promise<void>;
  /** Rolls everything back: the key is free again. */
  rollback(): Promise<void>;
}

/** What `KeyStore.beginRequest` found: the key owned (its row as admitted, and the open transaction), or what `admit` would answer. */
export type BeganRequest = { readonly owned: true; readonly row: KeyRow; readonly request: RequestTransaction } | Extract<AdmitResult<never>, { owned: false }>;

/**
 * What the PostgreSQL store asks of its transport: a {@link Runner} that sends the store's
 * statements (`postgres-sql.node.ts`) with bind parameters and opens transactions in as few round
 * trips as it can. Two implement it: the pipelined `pg` pool runner (`postgres-runner.node.ts`)
 * and PGlite's (`postgres-pglite.node.ts`).
 *
 * @module
 */
/** A statement of the store's own (never application SQL) and its bind parameters. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** What a statement returned: its rows and how many rows it changed (or returned). */
export interface QueryResult<T> {
  readonly rows: T[];
  readonly rowCount: number;
}

/**
 * Runs one statement on a connection or inside a transaction. Without `params` the text may hold
 * several statements (a DDL script) and the last one's result is returned.
 */
export type Query = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<QueryResult<T>>;

/**
 * A transaction {@link Runner.open} began: any statements, then `commit` or `rollback` (either
 * releases the connection; a second call is a no-op).
 */
export interface OpenTransaction {
  readonly query: Query;
  /** Runs `last` and COMMIT in one round trip; a throw rolls back. */
  commit(last: Statement): Promise<void>;
  rollback(): Promise<void>;
}

/** What {@link Runner.open} began: `first`'s answer, the transaction, and how `then` settled. */
export interface Opened<T> {
  readonly result: QueryResult<T>;
  readonly tx: OpenTransaction;
  readonly then?: PromiseSettledResult<QueryResult<unknown>> | undefined;
}

/** How {@link Runner.open} begins. */
export interface OpenOptions {
  /**
   * How long `first` may wait for a lock (PostgreSQL's `lock_timeout`, for `first` only: reset to
   * the session's own before anything behind it), so that an admission waiting for another
   * admission's open transaction gives up in time. Rounded up to a whole millisecond, at least 1; PGlite,
   * one backend whose transactions run one at a time, has no lock to wait for.
   */
  readonly lockTimeoutMs?: number | undefined;
  /**
   * How long the transaction may sit idle between two statements (PostgreSQL's
   * `idle_in_transaction_session_timeout`, for this transaction only): past it the server ends the
   * session, which rolls the transaction back. A whole request holds its key, invisible, until its
   * COMMIT; bounded by the lease, a process that froze inside it (stopped, its event loop blocked)
   * frees the key as a lease would, instead of holding it until its connection drops. Rounded up to
   * a whole millisecond, at least 1; a session whose own bound is shorter keeps its own. PGlite ignores
   * it: one process, whose freeze stops every caller.
   */
  readonly idleTimeoutMs?: number | undefined;
}

/** One engine, as the store sees it. */
export interface Runner {
  readonly query: Query;
  /**
   * {@link Query} for the store's own statements (fixed texts): on a `pg` pool each is a named
   * prepared statement, parsed and planned once per connection instead of at every call —
   * planning a statement costs PostgreSQL about as much as running it.
   */
  readonly prepared: Query;
  /**
   * BEGIN and `first` in one round trip (a throw rolls back and rethrows). With
   * {@link OpenTransaction.commit} a transaction of n statements costs n round trips, not n + 2
   * (on a pipelined connection; see {@link createPgRunner}). `then` (the
   * application's first statement) goes in the same round trip behind `first`, in the transaction:
   * a `first` that raises aborts the transaction, so `then` never takes effect; its own answer is
   * handed back as it settled.
   */
  open<T>(first: Statement, then?: Statement, options?: OpenOptions): Promise<Opened<T>>;
  /** `BEGIN … COMMIT` on one connection; a throw rolls back and rethrows. */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** Ends the pool when the store created it; an injected pool or PGlite belongs to its owner. */
  close(): Promise<void>;
}

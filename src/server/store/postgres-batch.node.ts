/**
 * Several statements in one round trip on a `pg` client that is not in pipeline mode (an app's
 * own pool, as apps create them): their Bind/Execute messages go out in one write, behind one
 * Sync, and the answers come back in one read. Without it each statement of a transaction waits
 * for the previous one's answer: a whole request's BEGIN, admission and COMMIT cost five round
 * trips where two suffice, and on a shared machine every round trip costs both processes a
 * wake-up (measured in `docs/benchmarks.md`).
 *
 * It is a `pg` "submittable" (the extension point `pg-cursor` uses): `client.query(batch)` queues
 * it like any query. Between two Syncs PostgreSQL stops at the first error and skips the rest, so
 * the answer says which statement failed; the statements behind it did not run.
 *
 * Named statements are parsed on a connection once. A failure in a batch that parsed a statement
 * leaves unknown which of its Parses took effect: the caller must then discard the connection
 * ({@link BatchAnswer.parsed}).
 *
 * @module
 */
import type pg from 'pg';
import type { QueryResult, Statement } from './postgres-transport.node.js';

/** `pg`'s connection as a submittable sees it (its message writers). */
interface WireConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  readonly parsedStatements: Record<string, string>;
  parse(query: { text: string; name?: string; types?: unknown[] }): void;
  bind(config: { statement?: string; values: unknown[] }): void;
  describe(msg: { type: 'P'; name: string }): void;
  execute(config: { portal: string; rows: number }): void;
  sync(): void;
}

/** A statement of a batch, and the name it is prepared under (none: parsed at every send). */
export interface BatchStatement extends Statement {
  readonly name?: string | undefined;
  /** Its rows are not wanted (a setting, COMMIT): not described, and dropped as they arrive. */
  readonly discard?: boolean | undefined;
}

/** How a batch ended: the results of the statements that ran, and the error that stopped it. */
export interface BatchAnswer {
  readonly results: ReadonlyArray<QueryResult<unknown> & { readonly command: string | null }>;
  /** The first failure; the statement at `results.length` raised it, those behind it never ran. */
  readonly error?: unknown;
  /** Whether the batch parsed a named statement (see the module comment). */
  readonly parsed: boolean;
}

/** `pg`'s row parser (`pg.Result`), per statement. */
type PgResult = pg.QueryResult & {
  addFields(fields: unknown[]): void;
  parseRow(row: unknown[]): unknown;
  addCommandComplete(msg: unknown): void;
};

/** What a batch uses of the `pg` module: its row parser and its conversion of bind values (Dates, arrays, JSON). */
export interface BatchDriver {
  readonly Result: new () => unknown;
  readonly utils: { readonly prepareValue: (value: unknown) => unknown };
}

/**
 * The submittable: build it, `client.query(batch)`, await {@link Batch.answer}.
 *
 * @example
 * ```ts
 * const batch = new Batch(pgModule as BatchDriver, [{ sql: 'BEGIN', params: [] }, { sql: 'SELECT $1::int AS n', params: [1] }]);
 * void pgClient.query(batch);
 * const { results, error } = await batch.answer;
 * ```
 */
export class Batch {
  readonly answer: Promise<BatchAnswer>;
  private settle!: (answer: BatchAnswer) => void;
  private readonly results: Array<QueryResult<unknown> & { command: string | null }> = [];
  private current: PgResult;
  private parsed = false;
  private readonly valueMapper: (value: unknown) => unknown;
  private done = false;
  /** Set by `pg` when a `query_timeout` applies. */
  callback?: (error: Error | null) => void;

  constructor(
    private readonly driver: BatchDriver,
    private readonly statements: readonly BatchStatement[],
  ) {
    this.valueMapper = driver.utils.prepareValue;
    this.answer = new Promise((resolve) => (this.settle = resolve));
    this.current = new driver.Result() as PgResult;
  }

  submit(connection: WireConnection): Error | null {
    // Every value converted before the first message is written: a value `pg` cannot send fails
    // the batch whole, instead of leaving half of it on the wire.
    let values: unknown[][];
    try {
      values = this.statements.map((statement) => statement.params.map((value) => this.valueMapper(value)));
    } catch (error) {
      return error as Error;
    }
    connection.stream.cork?.();
    try {
      for (const [index, statement] of this.statements.entries()) {
        const name = statement.name;
        if (name === undefined || connection.parsedStatements[name] === undefined) {
          connection.parse({ text: statement.sql, ...(name === undefined ? {} : { name }) });
          if (name !== undefined) {
            this.parsed = true;
            connection.parsedStatements[name] = statement.sql;
          }
        }
        connection.bind({ ...(name === undefined ? {} : { statement: name }), values: values[index]! });
        if (!statement.discard) connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    this.current.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.statements[this.results.length]?.discard) return;
    this.current.rows.push(this.current.parseRow(msg.fields) as never);
  }

  handleCommandComplete(msg: unknown): void {
    this.current.addCommandComplete(msg);
    this.next();
  }

  handleEmptyQuery(): void {
    this.next();
  }

  handleError(error: unknown): void {
    this.finish({ results: this.results, error, parsed: this.parsed });
  }

  handleReadyForQuery(): void {
    this.finish({ results: this.results, parsed: this.parsed });
  }

  handlePortalSuspended(): void {
    // `rows: 0` reads every row: a portal is never suspended.
  }

  handleCopyInResponse(): void {
    // The store sends no COPY.
  }

  handleCopyData(): void {
    // The store sends no COPY.
  }

  private next(): void {
    const result = this.current;
    this.results.push({ rows: result.rows, rowCount: result.rowCount ?? result.rows.length, command: result.command });
    this.current = new this.driver.Result() as PgResult;
  }

  private finish(answer: BatchAnswer): void {
    if (this.done) return;
    this.done = true;
    this.callback?.(null);
    this.settle(answer);
  }
}

/**
 * Sends `statements` as one batch on `client` and waits for its answer.
 *
 * @example
 * ```ts
 * const { results, error } = await runBatch(pgClient, pgModule as BatchDriver, [{ sql: 'SELECT 1 AS one', params: [] }]);
 * ```
 */
export function runBatch(client: pg.ClientBase, driver: BatchDriver, statements: readonly BatchStatement[]): Promise<BatchAnswer> {
  const batch = new Batch(driver, statements);
  void (client.query as unknown as (submittable: Batch) => unknown)(batch);
  return batch.answer;
}

/** The COMMIT behind a transaction's last statement. */
const COMMIT: BatchStatement = { sql: 'COMMIT', params: [], discard: true };

/**
 * `last` and COMMIT in one batch, then `end` (the connection's release): a failure of either
 * rolls back (COMMIT never ran behind a failed `last`) and throws; a COMMIT that PostgreSQL
 * answers with ROLLBACK (the transaction had failed before) throws too.
 *
 * @example
 * ```ts
 * await commitBatch(pgClient, pgModule as BatchDriver, { sql: 'SELECT 1', params: [] }, end);
 * ```
 */
export async function commitBatch(
  client: pg.ClientBase,
  driver: BatchDriver,
  last: BatchStatement,
  end: (sql?: string, failure?: unknown) => Promise<void>,
): Promise<void> {
  const answer = await runBatch(client, driver, [{ ...last, discard: true }, COMMIT]);
  if (answer.error !== undefined) {
    await end('ROLLBACK', answer.parsed ? answer.error : undefined);
    throw answer.error;
  }
  await end();
  const command = answer.results[1]?.command;
  if (command !== 'COMMIT') throw new Error(`pgRunner: the transaction was rolled back (${command ?? 'no answer'} to COMMIT)`);
}

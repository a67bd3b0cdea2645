/**
 * What the PostgreSQL store may assume about a connection when a pooler (PgBouncer, in session or
 * transaction mode, with or without `ignore_startup_parameters = options`) may sit in between
 * (issue 40): nothing it set on the session.
 *
 * - Settings: a pooler may drop the startup `options` (`-c search_path=…`) or hand the server
 *   session to another client between two transactions. So every transaction the store begins
 *   sets its isolation, schema and statement timeout itself, in the BEGIN's own message
 *   ({@link beginSql}: no extra round trip); the store's statements outside a transaction name
 *   their schema. What no transaction can carry, the isolation of those single statements, is the
 *   database's default: `migrate()` checks it and names the setting to change.
 * - Prepared statements: a named statement lives in one server session. Behind a pooler the next
 *   call may reach another ("prepared statement … does not exist"). {@link sessionProbe} tells a
 *   pooled connection from a direct one: PgBouncer answers the startup with a cancel key of its
 *   own, so the backend process id `pg` was given is not the one the server reports. The store
 *   prepares its statements only once a probe found a direct connection (an explicit
 *   `preparedStatements` wins either way).
 *
 * @module
 */
import type pg from 'pg';
import { DatabaseSetupError } from '../errors/database-setup-error.js';
import { InvalidOptionError } from '../errors/invalid-option-error.js';

/**
 * The BEGIN of every store transaction: READ COMMITTED, the schema first on the search path and
 * the statement timeout (when the store owns the pool), each for this transaction only, sent as
 * one simple-protocol message.
 *
 * @example
 * ```ts
 * beginSql('oncely', 15000); // 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL search_path = oncely, public; …'
 * ```
 */
export function beginSql(schema: string, statementTimeoutMs: number | undefined): string {
  const begin = `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL search_path = ${schema}, public`;
  if (statementTimeoutMs === undefined) return begin;
  if (!Number.isSafeInteger(statementTimeoutMs) || statementTimeoutMs < 0) {
    throw new InvalidOptionError('postgresKeyStore', 'statementTimeoutMs', `must be a whole number of milliseconds, got ${statementTimeoutMs}`);
  }
  return `${begin}; SET LOCAL statement_timeout = ${statementTimeoutMs}`;
}

/** What the probes found about the connections of one pool. */
export interface SessionProbe {
  /** Whether to send the store's statements as named prepared statements now. */
  prepared(): boolean;
  /** Whether some connection was found to go through a pooler. */
  pooled(): boolean;
  /**
   * Probes `client`, checked out by the store, unless it was probed already or `forced` decides
   * (then `undefined`: nothing to wait for on the hot path): awaited before the store's first
   * statement on it, so that no query of the store waits in `pg`'s queue behind another (the app's
   * `connect` hook may still be running its own).
   */
  checkedOut(client: pg.PoolClient): Promise<void> | undefined;
}

/** A `pg` client as the pool hands it out, with the backend process id of its startup. */
type Probed = pg.PoolClient & { readonly processID?: number | null; readonly pipeline?: boolean };

/**
 * Whether `client` reaches PostgreSQL through a pooler: the backend key data of its startup names
 * a process other than the one serving it.
 */
export async function throughPooler(client: Probed): Promise<boolean> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return rows[0]?.pid !== client.processID;
}

/**
 * Probes the connections of `pool` (see the module notes). `forced`: the store's
 * `preparedStatements` option when given, which decides alone. Until a probe answers, statements
 * go unnamed (always safe); a pooled connection turns prepared statements off for good.
 *
 * When: a pipelined connection (the store's own pool) on its `connect` event, ahead of whatever
 * comes next in its pipeline. Any other (an app's pool) the first time the store checks it out,
 * and awaited: `pg` 8 queues a query sent while another runs, with a DeprecationWarning printed
 * into the app's log, and `pg` 9 removes the queue; on `connect` the probe met the app's own
 * hooks (`client.query('SET …')`) and its first statement there.
 */
export function sessionProbe(pool: pg.Pool, forced: boolean | undefined): SessionProbe {
  let direct = false;
  let pooled = false;
  const probed = new WeakSet<pg.PoolClient>();
  const probe = (client: Probed): Promise<void> => {
    probed.add(client);
    return throughPooler(client).then(
      (through) => {
        if (through) pooled = true;
        else direct = true;
      },
      // A failed probe proves nothing: the state stays as it was.
      () => undefined,
    );
  };
  pool.on('connect', (client) => {
    if (forced === undefined && (client as Probed).pipeline === true) void probe(client);
  });
  return {
    prepared: () => forced ?? (direct && !pooled),
    pooled: () => pooled,
    checkedOut: (client) => (forced === undefined && !probed.has(client) ? probe(client) : undefined),
  };
}

/**
 * The error to throw for `error` when it is a pooler refusing the startup parameters the store's
 * own pool sends (strict PgBouncer: "unsupported startup parameter: options"); `undefined` for any
 * other error.
 *
 * @example
 * ```ts
 * await store.migrate?.().catch((error: unknown) => {
 *   throw poolerRefusal(error) ?? error;
 * });
 * ```
 */
export function poolerRefusal(error: unknown): DatabaseSetupError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const parameter = /unsupported startup parameter:\s*(\S+)/i.exec(message)?.[1];
  if (parameter === undefined) return undefined;
  return new DatabaseSetupError(
    'ignore_startup_parameters',
    `postgresKeyStore: the pooler in front of PostgreSQL refused the startup parameter ${JSON.stringify(parameter)} (${message}). ` +
      `The store sets what it needs per transaction, so let the pooler ignore it: PgBouncer's ignore_startup_parameters = extra_float_digits,options ` +
      `(and set the database's default_transaction_isolation to 'read committed' if it is not).`,
    { cause: error },
  );
}

/**
 * A tiny "query + transaction" runner over the two PostgreSQL engines the store accepts: a `pg`
 * pool (production, many server instances) and an in-process PGlite (tests on machines without a
 * server; its runner is in `postgres-pglite.node.ts`). The store's SQL is the same for both; only
 * how a statement reaches the engine differs. Values always travel as bind parameters: no key,
 * body or response is ever part of an SQL text (nor, therefore, of a statement log).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { requirePeer } from '../../optional-peer.node.js';
import { createPool } from './postgres-hosts.node.js';
import { urlOptions, withoutOptions } from './postgres-url.node.js';
import { beginSql, sessionProbe } from './postgres-session.node.js';
import type { OpenOptions, OpenTransaction, Opened, Query, QueryResult, Runner, Statement } from './postgres-transport.node.js';
import { InvalidOptionError } from '../errors/invalid-option-error.js';

/** Options of {@link createPgRunner}. */
export interface PgRunnerOptions {
  readonly connectionString?: string | undefined;
  readonly pool?: pg.Pool | undefined;
  /** PostgreSQL schema the pool's sessions look in first (`search_path`). */
  readonly schema: string;
  readonly connectTimeoutMs: number;
  readonly statementTimeoutMs: number;
  readonly max: number;
  /** Named prepared statements for the store's own SQL; `undefined`: only on a direct connection (`postgres-session.node.ts`). */
  readonly prepare: boolean | undefined;
}

/**
 * The session's own lock timeout, kept aside for this transaction, and put back (see
 * {@link OpenOptions.lockTimeoutMs}): `SET LOCAL … TO DEFAULT` would give the role's or the
 * server's default instead of what the pool's sessions set.
 */
const LOCK_TIMEOUT_KEPT = "SELECT set_config('oncely.kept_lock_timeout', current_setting('lock_timeout'), true)";
/** PostgreSQL's largest `lock_timeout` and `idle_in_transaction_session_timeout` (an int of milliseconds). */
const MAX_TIMEOUT_MS = 2_147_483_647;
const LOCK_TIMEOUT_DEFAULT = "SELECT set_config('lock_timeout', current_setting('oncely.kept_lock_timeout'), true)";
/**
 * The idle bound for this transaction (see {@link OpenOptions.idleTimeoutMs}), never looser than
 * the session's own: a pool whose operator set a shorter `idle_in_transaction_session_timeout`
 * keeps it (`0` is none).
 */
const idleBound = (ms: number): string => {
  const current = "current_setting('idle_in_transaction_session_timeout')";
  return `SELECT set_config('idle_in_transaction_session_timeout', CASE WHEN ${current}::interval = '0' OR ${current}::interval > interval '1 ms' * ${ms} THEN '${ms}' ELSE ${current} END, true)`;
};

/**
 * `value` of {@link OpenOptions} `name` as PostgreSQL takes it (it is written into the BEGIN's
 * text): rounded up to a whole millisecond, from 1 (`0` would mean no bound) to PostgreSQL's largest.
 */
function milliseconds(name: keyof OpenOptions, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(value) || value < 0) throw new InvalidOptionError('postgresKeyStore', name, `must be a number of milliseconds ≥ 0, got ${value}`);
  return Math.min(MAX_TIMEOUT_MS, Math.max(1, Math.ceil(value)));
}

/** Distinct statement texts a runner prepares on its sessions (the store's own are about twenty). */
const PREPARED_TEXTS = 256;

/** `pg` 8.23's pipeline mode, which its type definitions do not know yet. */
type Pipelined = { readonly pipeline?: boolean };

/** A pooled connection as `pg` makes it: a `Client`, with its wire connection. */
type Pooled = pg.PoolClient & Pick<pg.Client, 'connection'> & Pipelined;

/** A settled answer's value, or its failure thrown. */
const valueOf = <T>(settled: PromiseSettledResult<T>): T => {
  if (settled.status === 'rejected') throw settled.reason;
  return settled.value;
};

/**
 * Statements `send` issues on a pipelined `client`, written to the socket at once: `pg` writes
 * each query of a pipeline on its own, and a round trip of three statements would otherwise
 * cost three writes and as many packets.
 */
function together<T>(client: Pooled, send: () => T): T {
  const { stream } = client.connection;
  stream.cork();
  try {
    return send();
  } finally {
    stream.uncork();
  }
}

/**
 * Throws unless COMMIT committed: PostgreSQL answers the COMMIT of a failed transaction with
 * ROLLBACK and no error (a work that caught the failure of one of its statements).
 */
const committed = (result: pg.QueryResult | pg.QueryResult[]): void => {
  const command = (Array.isArray(result) ? result.at(-1) : result)?.command;
  if (command !== 'COMMIT') throw new Error(`pgRunner: the transaction was rolled back (${command ?? 'no answer'} to COMMIT)`);
};

/**
 * A runner over a `pg` pool: its own (from a connection string) or one the caller passes in.
 *
 * Round trips: the pool the runner creates is in `pg`'s pipeline mode, so BEGIN, the store's
 * statements and COMMIT go out without waiting for each other, and one round trip carries what
 * {@link Runner.open} and {@link OpenTransaction.commit} promise. In a pipeline an error in one
 * statement does not stop the next: each answer is checked, in order. A pool passed in is used as
 * its owner configured it: not pipelined (the default), the same statements go one after another —
 * the same results and transactions, one round trip per statement.
 *
 * Fail closed: `connectionTimeoutMillis` makes every call reject within `connectTimeoutMs` when
 * the server is unreachable, and the pool opens fresh connections once it is back, so the store
 * recovers with no restart. Idle connections killed by a server restart surface as pool `error`
 * events; without a listener Node would crash the whole process on them.
 */
export function createPgRunner(options: PgRunnerOptions): Runner {
  const owned = options.pool === undefined;
  const config: pg.PoolConfig & Pipelined = {
    connectionString: withoutOptions(options.connectionString),
    max: options.max,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // Client-side bound too: `statement_timeout` cannot fire on a server that stopped answering.
    query_timeout: options.statementTimeoutMs + options.connectTimeoutMs,
    // Set per session at connect time (single statements outside a transaction get them on a
    // direct connection); a pooler may drop them, so each transaction sets its own too
    // (`postgres-session.node.ts`). `pg` lets a URL's `?options=` replace this field: keep both.
    options: [
      urlOptions(options.connectionString),
      `-c search_path=${options.schema},public -c statement_timeout=${options.statementTimeoutMs} -c default_transaction_isolation=read\\ committed`,
    ]
      .filter(Boolean)
      .join(' '),
    pipeline: true,
  };
  const pool = options.pool ?? createPool(requirePeer<typeof pg>('pg'), config);
  if (owned) pool.on('error', () => undefined);
  // The store's own SQL names its schema; the app's SQL runs in transactions, which set their
  // isolation, schema and (on our pool) timeout in the BEGIN's own message.
  const begin = beginSql(options.schema, owned ? options.statementTimeoutMs : undefined);
  const probe = sessionProbe(pool, options.prepare);

  /** The last result of a multi-statement answer (or the one result). */
  const resultOf = <T>(results: pg.QueryResult | pg.QueryResult[]): QueryResult<T> => {
    const result = Array.isArray(results) ? results[results.length - 1]! : results;
    return { rows: result.rows as T[], rowCount: result.rowCount ?? result.rows.length };
  };

  const over =
    (client: pg.Pool | pg.PoolClient): Query =>
    async <T>(sql: string, params?: readonly unknown[]) =>
      // Without values pg uses the simple protocol, which runs scripts and answers one result each.
      resultOf<T>(await client.query(sql, params as unknown[] | undefined));

  // Named after a hash of the text: stores in different schemas may share an injected pool.
  const names = new Map<string, string>();
  const named = (sql: string): string => {
    let name = names.get(sql);
    if (name === undefined) names.set(sql, (name = `oncely_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`));
    return name;
  };
  /** A store statement on `client` (the pool, or a checked-out connection). */
  const send = (client: pg.Pool | pg.PoolClient, { sql, params }: Statement): Promise<pg.QueryResult> =>
    client.query(probe.prepared() ? { name: named(sql), text: sql, values: params as unknown[] } : { text: sql, values: params as unknown[] });
  /**
   * {@link Query} inside a transaction, where the application's statements run too: one with
   * values is prepared like the store's own (its parse and plan cost PostgreSQL more than a
   * typical INSERT's execution), up to {@link PREPARED_TEXTS} distinct texts per runner, so an app
   * that builds its SQL cannot fill the sessions with statements; past that, texts go unnamed.
   * Without values a text stays in the simple protocol, which runs scripts (the app's DDL).
   */
  const inTransaction =
    (client: pg.PoolClient): Query =>
    async <T>(sql: string, params?: readonly unknown[]) =>
      resultOf<T>(
        await (probe.prepared() && params !== undefined && params.length > 0 && (names.has(sql) || names.size < PREPARED_TEXTS)
          ? send(client, { sql, params })
          : client.query(sql, params as unknown[] | undefined)),
      );

  /**
   * A pooled client, released exactly once by `end` (after `sql`, if given; a connection whose
   * `sql` failed, or that `end` is told failed, is destroyed instead of pooled). A checked-out
   * client whose server goes away between two statements (while the caller awaits something
   * else) emits `error` outside any query; unheard, Node would crash the process.
   */
  async function checkout(): Promise<{ client: Pooled; pipelined: boolean; ended(): boolean; end(sql?: string, failure?: unknown): Promise<void> }> {
    const client = (await pool.connect()) as Pooled;
    let broken: Error | undefined;
    const onError = (error: Error): void => void (broken = error);
    client.on('error', onError);
    const probing = probe.checkedOut(client);
    if (probing) await probing;
    let ended = false;
    return {
      client,
      pipelined: client.pipeline === true,
      ended: () => ended,
      async end(sql, failure) {
        if (ended) return;
        ended = true;
        if (failure !== undefined) broken ??= failure as Error;
        try {
          if (sql) await client.query(sql);
        } catch (error) {
          broken = error as Error;
        } finally {
          client.off('error', onError);
          client.release(broken);
        }
      },
    };
  }

  return {
    query: over(pool),
    prepared: async <T>(sql: string, params?: readonly unknown[]) => resultOf<T>(await send(pool, { sql, params: params ?? [] })),
    async open<T>(first: Statement, then?: Statement, options?: OpenOptions): Promise<Opened<T>> {
      const bounded = milliseconds('lockTimeoutMs', options?.lockTimeoutMs);
      const idle = milliseconds('idleTimeoutMs', options?.idleTimeoutMs);
      // The lock wait bounded for `first` alone: set in the BEGIN's own message (the session's own
      // value kept aside), and put back behind it. The idle bound holds to the transaction's end.
      let opening = bounded === undefined ? begin : `${begin}; ${LOCK_TIMEOUT_KEPT}; SET LOCAL lock_timeout = ${bounded}`;
      if (idle !== undefined) opening += `; ${idleBound(idle)}`;
      const { client, pipelined, ended, end } = await checkout();
      const unbound = (): Promise<unknown> | undefined => (bounded === undefined ? undefined : client.query(LOCK_TIMEOUT_DEFAULT));
      const rollback = (): Promise<void> => end('ROLLBACK');
      const onClient = inTransaction(client);
      const tx: OpenTransaction = {
        // Refused once ended: the connection may already serve another request's transaction.
        query: (sql, params) => (ended() ? Promise.reject(new Error('pgRunner: this transaction has ended')) : onClient(sql, params)),
        async commit(last) {
          if (ended()) throw new Error('pgRunner: this transaction has ended');
          if (pipelined) {
            // A failed `last` leaves the transaction aborted, and the COMMIT behind it ends it.
            const [wrote, ending] = await Promise.allSettled(together(client, () => [send(client, last), client.query('COMMIT')]));
            await end(undefined, ending.status === 'rejected' ? ending.reason : undefined);
            valueOf(wrote);
            committed(valueOf(ending));
            return;
          }
          try {
            await send(client, last);
            committed(await client.query('COMMIT'));
          } catch (error) {
            // `last` failed (COMMIT never ran) or COMMIT itself did: nothing is left open.
            await rollback();
            throw error;
          }
          await end();
        },
        rollback,
      };
      let begun = pipelined;
      try {
        if (pipelined) {
          const [began, opened, reset, followed] = await Promise.allSettled(
            together(client, () => [client.query(opening), send(client, first), unbound(), then && onClient(then.sql, then.params)] as const),
          );
          valueOf(began);
          const result = resultOf<T>(valueOf(opened));
          valueOf(reset);
          return { result, tx, then: then && (followed as PromiseSettledResult<QueryResult<unknown>>) };
        }
        begun = true;
        await client.query(opening);
        const result = resultOf<T>(await send(client, first));
        await unbound();
        return { result, tx, then: then && (await Promise.allSettled([onClient(then.sql, then.params)]))[0] };
      } catch (error) {
        await (begun ? rollback() : end());
        throw error;
      }
    },
    async transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
      const { client, pipelined, end } = await checkout();
      let began: Promise<unknown> | undefined;
      const start = (): Promise<T> => {
        began = client.query(begin);
        began.catch(() => undefined);
        return work(inTransaction(client));
      };
      try {
        // Pipelined, BEGIN leaves in one write with the work's first statement; its answer is
        // checked before COMMIT.
        if (!pipelined) await (began = client.query(begin));
        const result = await (pipelined ? together(client, start) : work(inTransaction(client)));
        await began;
        committed(await client.query('COMMIT'));
        await end();
        return result;
      } catch (error) {
        await began?.catch(() => undefined);
        await end('ROLLBACK');
        throw error;
      }
    },
    close: async () => {
      if (owned) await pool.end();
    },
  };
}

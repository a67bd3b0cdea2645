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
import { runBatch, type BatchDriver, type BatchStatement } from './postgres-batch.node.js';
import { LOCK_TIMEOUT_DEFAULT, opening, type Opening } from './postgres-opening.node.js';
import { commitBatchWatched, commitPipelined, committed, together, valueOf, watched } from './postgres-commit.node.js';
import { isCommitUnconfirmed } from './unconfirmed-commit.js';

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

/** Distinct statement texts a runner prepares on its sessions (the store's own are about twenty). */
const PREPARED_TEXTS = 256;

/** `pg` 8.23's pipeline mode, which its type definitions do not know yet. */
type Pipelined = { readonly pipeline?: boolean };

/** A pooled connection as `pg` makes it: a `Client`, with its wire connection. */
type Pooled = pg.PoolClient & Pick<pg.Client, 'connection'> & Pipelined;

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
  const driver = requirePeer<typeof pg>('pg');
  const pool = options.pool ?? createPool(driver, config);
  if (owned) pool.on('error', () => undefined);
  // The store's own SQL names its schema; the app's SQL runs in transactions, which set their
  // isolation, schema and (on our pool) timeout in the BEGIN's own message.
  const statementTimeoutMs = owned ? options.statementTimeoutMs : undefined;
  const begin = beginSql(options.schema, statementTimeoutMs);
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

  /**
   * `run` on a connection of the pool, as `pool.query` would (a failed connection is destroyed),
   * watched: a statement outside a transaction commits on its own, and that commit may be abandoned
   * by its wait for a standby (`postgres-commit-watch.node.ts`).
   */
  async function alone<T>(run: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    // An error between two messages goes to the query in flight; unheard, Node would crash the process.
    const onError = (): void => undefined;
    client.on('error', onError);
    let broken: Error | undefined;
    try {
      return await watched(client, () => run(client));
    } catch (error) {
      if (!isCommitUnconfirmed(error)) broken = error as Error;
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  const batchDriver = driver as unknown as BatchDriver;
  /** A store statement in a batch: named as {@link send} names it. */
  const inBatch = (statement: BatchStatement): BatchStatement => (probe.prepared() ? { ...statement, name: named(statement.sql) } : statement);
  /** The application's statement in a batch: named as {@link inTransaction} would name it. */
  const appInBatch = (statement: Statement): BatchStatement =>
    statement.params.length > 0 && (names.has(statement.sql) || names.size < PREPARED_TEXTS) ? inBatch(statement) : statement;

  /**
   * {@link Runner.open} on a connection that is not pipelined: the opening, `first`, the lock
   * timeout put back and `then` in one batch. `failed`: what failed before `then` (the caller
   * rolls back); `then`'s own failure is handed back as it settled.
   */
  async function openBatch<T>(client: pg.PoolClient, begins: Opening, first: Statement, then: Statement | undefined) {
    const statements = [...begins.statements.map((statement) => inBatch({ ...statement, discard: true })), inBatch(first)];
    if (begins.bounded) statements.push(inBatch({ sql: LOCK_TIMEOUT_DEFAULT, params: [], discard: true }));
    const thenAt = then ? statements.push(appInBatch(then)) - 1 : statements.length;
    const answer = await runBatch(client, batchDriver, statements);
    const poisoned = answer.error !== undefined && answer.parsed ? answer.error : undefined;
    const failedAt = answer.error === undefined ? statements.length : answer.results.length;
    if (failedAt < thenAt) return { poisoned, failed: answer.error };
    const result = answer.results[begins.statements.length] as QueryResult<T>;
    const followed: PromiseSettledResult<QueryResult<unknown>> | undefined =
      then && (failedAt === thenAt ? { status: 'rejected', reason: answer.error } : { status: 'fulfilled', value: answer.results[thenAt]! });
    return { poisoned, failed: undefined, result, then: followed };
  }

  return {
    query: (sql, params) => alone((client) => over(client)(sql, params)),
    prepared: <T>(sql: string, params?: readonly unknown[]) => alone(async (client) => resultOf<T>(await send(client, { sql, params: params ?? [] }))),
    async open<T>(first: Statement, then?: Statement, openOptions?: OpenOptions): Promise<Opened<T>> {
      const begins = opening(begin, options.schema, statementTimeoutMs, openOptions);
      const { client, pipelined, ended, end } = await checkout();
      // A batch that failed after parsing a statement leaves the connection's prepared statements unknown.
      let poisoned: unknown;
      const rollback = (): Promise<void> => end('ROLLBACK', poisoned);
      const onClient = inTransaction(client);
      const tx: OpenTransaction = {
        // Refused once ended: the connection may already serve another request's transaction.
        query: (sql, params) => (ended() ? Promise.reject(new Error('pgRunner: this transaction has ended')) : onClient(sql, params)),
        async commit(last) {
          if (ended()) throw new Error('pgRunner: this transaction has ended');
          if (!pipelined) return commitBatchWatched(client, batchDriver, inBatch(last), (sql, failure) => end(sql, failure ?? poisoned));
          return commitPipelined(client, () => send(client, last), end);
        },
        rollback,
      };
      try {
        if (!pipelined) {
          const opened = await openBatch<T>(client, begins, first, then);
          poisoned = opened.poisoned;
          if (opened.failed !== undefined) throw opened.failed;
          return { result: opened.result!, then: opened.then, tx };
        }
        const unbound = (): Promise<unknown> | undefined => (begins.bounded ? client.query(LOCK_TIMEOUT_DEFAULT) : undefined);
        const [began, opened, reset, followed] = await Promise.allSettled(
          together(client, () => [client.query(begins.script), send(client, first), unbound(), then && onClient(then.sql, then.params)] as const),
        );
        valueOf(began);
        const result = resultOf<T>(valueOf(opened));
        valueOf(reset);
        return { result, tx, then: then && (followed as PromiseSettledResult<QueryResult<unknown>>) };
      } catch (error) {
        await end('ROLLBACK', poisoned);
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
        committed(await watched(client, () => client.query('COMMIT')));
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

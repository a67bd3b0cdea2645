/**
 * The PostgreSQL KeyStore: the engine for many server instances on one database. The database
 * arbitrates every race (admission, takeover, fencing) and is the only clock: lease expiry,
 * `leaseRemainingMs`, `createdAt` and `expiresAt` all come from `now()`, so instances with skewed
 * clocks still agree.
 *
 * The table, its daily partitions (reaped by dropping whole partitions) and why `(client_id, key)`
 * stays unique across partitions are explained in `postgres-schema.node.ts`.
 *
 * Fail closed: when the database cannot be reached, every call rejects within `connectTimeoutMs`
 * (the handler answers `503` + `Retry-After`), and the pool reconnects on its own when it returns.
 *
 * @module
 */
import type pg from 'pg';
import { createPgRunner, createPgliteRunner, schemaFromUrl, type OpenTransaction, type PgliteLike, type Query, type QueryResult, type Runner, type Statement } from './postgres-runner.node.js';
import { dropDetachedPartitions, dropExpiredPartitions, ensurePartitions, migrate, type PartitionPlan } from './postgres-schema.node.js';
import { ROW, toAdmitResult, toRow, type Admitted, type RawRow } from './postgres-rows.node.js';
import type { AdmitInput, AdmitResult, AppSchema, Fenced, FinalResponse, FinishOptions, FirstPhase, KeyStore, Lease, PhaseCommit, PointCommit, PriorCommit, StoredResponse, Tx } from './types.js';

export type { PgliteLike, PgliteQueryable, PgliteResults } from './postgres-runner.node.js';

/**
 * Options of {@link postgresKeyStore}: exactly one of `connectionString`, `pool` or `pglite`.
 *
 * @example
 * ```ts
 * const options: PostgresKeyStoreOptions = { connectionString: 'postgres://db.internal/payments', schema: 'oncely', ttlMs: 7 * 86_400_000 };
 * ```
 */
export interface PostgresKeyStoreOptions {
  /**
   * A libpq URL; the store creates (and on `close()` ends) its own `pg` pool.
   * @example 'postgres://oncely@db.internal:5432/payments'
   */
  readonly connectionString?: string;
  /** A `pg` pool owned by the caller (not ended by `close()`). */
  readonly pool?: pg.Pool;
  /** An in-process PGlite instance (tests, embedded use), owned by the caller. */
  readonly pglite?: PgliteLike;
  /**
   * The PostgreSQL schema holding the key table and the app's tables; created if missing.
   * Lower-case letters, digits and `_`.
   * @default the first `search_path` entry of the URL's `?options=`, else 'public'
   */
  readonly schema?: string;
  /**
   * Retention planned for: partitions are created this far ahead, and an in-flight row found in
   * an expired partition gets this much more time. Admissions carry their own `ttlMs`.
   * @default 86400000 (24 h)
   */
  readonly ttlMs?: number;
  /**
   * Width of one partition of the key table. Fixed when the table is first created.
   * @default 86400000 (one day)
   */
  readonly partitionMs?: number;
  /**
   * How long a call waits for a connection before rejecting (fail closed). `pg` applies it to
   * opening a connection and to waiting for a free one in the pool, so under overload a call
   * fails (the handler answers `503`) instead of queueing without bound.
   * @default 5000
   */
  readonly connectTimeoutMs?: number;
  /**
   * `statement_timeout` of the store's own pool: a hung statement rejects instead of holding a
   * request forever.
   * @default 15000
   */
  readonly statementTimeoutMs?: number;
  /**
   * Send the store's own statements as named prepared statements (planned once per
   * connection). Turn off behind a pooler in transaction mode that cannot keep them (PgBouncer
   * before 1.21).
   * @default true
   */
  readonly preparedStatements?: boolean;
  /**
   * Connections in the store's own pool.
   * @default 10
   */
  readonly maxConnections?: number;
  /**
   * Largest stored response body, in UTF-8 bytes: the key table is not a blob store. A larger
   * final response makes `finish` throw (and commit nothing).
   * @default 65536
   */
  readonly maxResponseBytes?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Thrown inside a transaction to roll it back when the lease no longer holds the row. */
class LeaseLost {}

/**
 * Opens a PostgreSQL KeyStore over a connection string, a `pg` pool or a PGlite instance. Call
 * `migrate()` once before use; any number of instances may do so at the same time.
 *
 * @example
 * ```ts
 * import { postgresKeyStore } from 'oncely/server';
 * const store = postgresKeyStore({ connectionString: process.env.DATABASE_URL, schema: 'oncely' });
 * await store.migrate();
 * ```
 */
export function postgresKeyStore(options: PostgresKeyStoreOptions): KeyStore {
  const schema = options.schema ?? schemaFromUrl(options.connectionString) ?? 'public';
  if (!SCHEMA_NAME.test(schema)) throw new RangeError(`postgresKeyStore: invalid schema name ${JSON.stringify(schema)}`);
  const sources = [options.connectionString, options.pool, options.pglite].filter((source) => source !== undefined);
  if (sources.length !== 1) throw new TypeError('postgresKeyStore: pass exactly one of connectionString, pool or pglite');
  const ttlMs = options.ttlMs ?? 86_400_000;
  const partitionMs = options.partitionMs ?? 86_400_000;
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  const runner: Runner = options.pglite
    ? createPgliteRunner(options.pglite, schema)
    : createPgRunner({
        connectionString: options.connectionString,
        pool: options.pool,
        schema,
        connectTimeoutMs: options.connectTimeoutMs ?? 5000,
        statementTimeoutMs: options.statementTimeoutMs ?? 15_000,
        max: options.maxConnections ?? 10,
        prepare: options.preparedStatements ?? true,
      });
  // Two partitions of slack past the retention, so the reaper can move in-flight rows forward.
  const plan: PartitionPlan = { partitionMs, aheadMs: ttlMs + 2 * partitionMs };
  const t = `${schema}.oncely_keys`;

  // Single flight: a burst of admissions that all miss a partition waits for one creation, instead
  // of each holding a pooled connection while queueing on the DDL lock.
  let ensuring: Promise<void> | undefined;
  const ensureFor = (ttlMsAhead: number): Promise<void> =>
    (ensuring ??= (async () => {
      const { rows } = await runner.query<{ at: number }>(`SELECT floor(extract(epoch FROM now()) * 1000)::float8 + $1 AS at`, [ttlMsAhead]);
      await ensurePartitions(runner, schema, { ...plan, alsoAt: rows[0]!.at });
    })().finally(() => {
      ensuring = undefined;
    }));

  const txOver = (query: Query): Tx => ({
    dialect: 'postgres',
    run: async (sql, params) => (await query(sql, params ?? [])).rowCount,
    all: async <T extends object>(sql: string, params?: readonly unknown[]) => (await query<T>(sql, params ?? [])).rows,
    get: async <T extends object>(sql: string, params?: readonly unknown[]): Promise<T | undefined> => {
      const { rows } = await query<T>(sql, params ?? []);
      return rows[0];
    },
  });

  /**
   * Work under a lease, then `write` (`oncely_point` or `oncely_finish`, which raise OLOST when
   * the lease no longer holds the row). The transaction opens only when the work runs its first
   * statement:
   * - no statement: `write` alone, atomic on its own (one round trip);
   * - statements: the first goes after BEGIN and `oncely_lock` (one round trip: `SELECT … FOR
   *   UPDATE` of the row under the lease, so an owner that lost its row runs none of its
   *   statements and a concurrent takeover waits for this transaction, then finds a fresh lease);
   *   `write` goes with COMMIT. (As on SQLite, JS the work runs before its first statement is not
   *   fenced; only what reaches the database is.)
   * `prior` (an outcome mark) rides in front of the first round trip as a transaction of its own,
   * raising OLOST if the lease is gone so that nothing after it runs; `next` (EXTn_SENT) rides
   * behind the COMMIT as `oncely_try_point`, which answers whether it held. A mark with a
   * `committed` hook goes alone, first: the hook runs after it and before anything else commits.
   */
  async function fenced<T>(
    lease: Lease,
    work: ((tx: Tx) => Promise<T>) | undefined,
    write: (result: T | undefined) => Statement,
    prior?: PriorCommit,
    next?: { readonly point: PointCommit; readonly after: string },
  ): Promise<Fenced<T>> {
    const then = next ? pointStatement('oncely_try_point', lease, next.point) : undefined;
    // A round trip that ended with `then` and failed may have failed in `then` alone, after the
    // phase committed: the row says which (then `next` is false and the caller sends it again).
    const unlessLanded = async (error: unknown): Promise<undefined> => {
      if (!next || isLeaseLost(error) || !(await landed(lease, next.after))) throw error;
      return undefined;
    };
    // The mark goes out once, with whichever round trip comes first: never again after that, even
    // when that round trip failed (it may have committed, and a later copy would move the row back).
    let mark = prior ? pointStatement('oncely_point', lease, prior) : undefined;
    const takeMark = (): Statement | undefined => {
      const taken = mark;
      mark = undefined;
      return taken;
    };
    // A mark with a hook must be seen committed before anything after it commits, and its hook
    // may use the store: it goes alone, before the work starts.
    if (prior?.committed && !(await markAlone(takeMark()!, prior))) return { ok: false };
    let open: OpenTransaction | undefined;
    let opening: Promise<OpenTransaction> | undefined;
    const begin = (): Promise<OpenTransaction> =>
      (opening ??= runner
        .open<{ held: boolean }>({ sql: `SELECT ${schema}.oncely_lock($1, $2, $3) AS held`, params: fenceArgs(lease) }, takeMark())
        .then(({ result, tx }) => {
          open = tx;
          if (result.rows[0]?.held !== true) throw new LeaseLost();
          return tx;
        }));
    const query: Query = async (sql, params) => (await begin()).query(sql, params);
    try {
      const value = work ? await work(txOver(query)) : undefined;
      const statement = write(value);
      let held: QueryResult<{ ok?: boolean }> | undefined;
      if (opening) {
        // Awaited again: a work that caught the failure of its first statement (a lost lease, a
        // broken connection) must not get its write committed without it.
        const tx = await opening;
        held = await tx.commit(statement, then).catch(unlessLanded);
      } else {
        const unsent = takeMark();
        if (unsent || then) held = await runner.sequence<{ ok?: boolean }>([...(unsent ? [unsent] : []), statement, ...(then ? [then] : [])]).catch(unlessLanded);
        else await runner.prepared(statement.sql, statement.params);
      }
      return then ? { ok: true, value: value as T, next: held?.rows[0]?.ok === true } : { ok: true, value: value as T };
    } catch (error) {
      // The work may fail while its first statement's BEGIN is still on the wire: wait for it, or
      // that transaction (and the row lock it takes) would never end.
      await opening?.catch(() => undefined);
      await open?.rollback();
      if (error instanceof LeaseLost || isLeaseLost(error)) return { ok: false };
      // A work that failed before it reached the database never sent the mark: it goes alone.
      const unsent = takeMark();
      if (unsent && !(await markAlone(unsent, prior!))) return { ok: false };
      throw error;
    }
  }

  /** Commits an outcome mark on its own; false when the lease is gone. Any other failure is left to the next attempt (it probes). */
  async function markAlone(mark: Statement, prior: PriorCommit): Promise<boolean> {
    try {
      await runner.prepared(mark.sql, mark.params);
    } catch (error) {
      return !isLeaseLost(error);
    }
    await prior.committed?.();
    return true;
  }

  /** Whether the row is at `point` under `lease` (a failed round trip's phase did commit). */
  async function landed(lease: Lease, point: string): Promise<boolean> {
    try {
      const { rows } = await runner.prepared(`SELECT 1 AS one FROM ${t} WHERE client_id = $1 AND key = $2 AND lease_token = $3 AND recovery_point = $4`, [
        ...fenceArgs(lease),
        point,
      ]);
      return rows.length === 1;
    } catch {
      return false;
    }
  }

  const isLeaseLost = (error: unknown): boolean => (error as { code?: unknown } | null | undefined)?.code === 'OLOST';

  /** `oncely_point` (raises OLOST) or `oncely_try_point` (answers `ok`) for a point with no work. */
  const pointStatement = (fn: 'oncely_point' | 'oncely_try_point', lease: Lease, point: PointCommit, data: Readonly<Record<string, unknown>> = point.data ?? {}): Statement => ({
    sql: `SELECT ${schema}.${fn}($1, $2, $3, $4, $5, $6, true, $7) AS ok`,
    // `durable: false` is the one place a commit is relaxed: the function turns synchronous_commit
    // off for its own transaction, whether it is sent alone or with the work's COMMIT.
    params: [...fenceArgs(lease), point.recoveryPoint, JSON.stringify(data), point.leaseMs, point.durable !== false],
  });

  const fenceArgs = (lease: Lease): string[] => [lease.clientId, lease.key, lease.token];

  return {
    dialect: 'postgres',

    migrate: (app?: AppSchema) => migrate(runner, schema, app?.postgres, plan),

    async admit<T>(input: AdmitInput, first?: FirstPhase<T>): Promise<AdmitResult<T>> {
      const args = [input.clientId, input.key, input.requestHash, input.endpoint, input.requestBody, input.leaseMs, input.ttlMs];
      const sql = `SELECT a.owned, a.lease, a.row_json, floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms
                     FROM ${schema}.oncely_admit($1, $2, $3, $4, $5, $6, $7) a`;
      // 23514: no partition covers this expiry (a retention longer than planned): create the one
      // it needs and the next (the clock moves on before the retry), then admit again.
      for (let attempt = 1; ; attempt += 1) {
        let admitting = true;
        try {
          if (!first) {
            const { rows } = await runner.prepared<Admitted>(sql, args);
            return toAdmitResult(input.clientId, input.key, rows[0]!);
          }
          // The INSERT, the first phase's work and its recovery point in one transaction. The
          // admission's advisory lock is held until COMMIT: a duplicate waits, then finds the row
          // at its recovery point.
          const { result, tx } = await runner.open<Admitted>({ sql, params: args });
          admitting = false;
          try {
            const admitted = toAdmitResult<T>(input.clientId, input.key, result.rows[0]!);
            if (!admitted.owned) {
              await tx.rollback();
              return admitted;
            }
            const value = await first.work(txOver(tx.query));
            const { commit } = first;
            const patch = { ...commit.data, ...(commit.dataFrom?.(value) ?? {}) };
            const held = await tx
              .commit(
                { sql: `SELECT ${schema}.oncely_point($1, $2, $3, $4, $5, $6, false, $7)`, params: [...fenceArgs(admitted.lease), commit.recoveryPoint, JSON.stringify(patch), commit.leaseMs, commit.durable !== false] },
                commit.next ? pointStatement('oncely_try_point', admitted.lease, commit.next) : undefined,
              )
              // As in fenced(): if only the point after the COMMIT failed, the admission stands.
              .catch(async (error: unknown) => {
                if (!commit.next || !(await landed(admitted.lease, commit.recoveryPoint))) throw error;
                return undefined;
              });
            const row = { ...admitted.row, recoveryPoint: commit.recoveryPoint, data: patch };
            return { ...admitted, row, first: commit.next ? { value, next: (held?.rows[0] as { ok?: boolean } | undefined)?.ok === true } : { value } };
          } catch (error) {
            await tx.rollback();
            throw error;
          }
        } catch (error) {
          if (!admitting || (error as { code?: unknown }).code !== '23514' || attempt === 3) throw error;
          await ensureFor(input.ttlMs);
        }
      }
    },

    async load(clientId, key) {
      const { rows } = await runner.prepared<RawRow>(`SELECT ${ROW} FROM ${t} WHERE client_id = $1 AND key = $2`, [clientId, key]);
      return rows[0] ? toRow(rows[0]) : undefined;
    },

    async takeOver(clientId, key, leaseMsForTakeover) {
      const { rows } = await runner.prepared<{ lease_token: string }>(
        `UPDATE ${t} SET lease_token = gen_random_uuid()::text, lease_until = now() + $3 * interval '1 millisecond'
          WHERE client_id = $1 AND key = $2 AND state = 'started' AND (lease_token IS NULL OR lease_until <= now())
          RETURNING lease_token`,
        [clientId, key, leaseMsForTakeover],
      );
      return rows[0] ? { clientId, key, token: rows[0].lease_token } : null;
    },

    commitPhase: <T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>): Promise<Fenced<T | undefined>> =>
      fenced(
        lease,
        work,
        (result) => pointStatement('oncely_point', lease, phase, { ...phase.data, ...(phase.dataFrom?.(result) ?? {}) }),
        phase.prior,
        phase.next && { point: phase.next, after: phase.recoveryPoint },
      ),

    finish: <T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, options?: FinishOptions) =>
      fenced(
        lease,
        work,
        (result) => {
          const final: StoredResponse = typeof response === 'function' ? response(result) : response;
          const bytes = Buffer.byteLength(final.body, 'utf8');
          if (bytes > maxResponseBytes) {
            throw new RangeError(`postgresKeyStore: a ${bytes}-byte response exceeds maxResponseBytes (${maxResponseBytes})`);
          }
          return { sql: `SELECT ${schema}.oncely_finish($1, $2, $3, $4, $5, $6)`, params: [...fenceArgs(lease), final.status, JSON.stringify(final.headers), final.body] };
        },
        options?.prior,
      ),

    async release(lease, { forget }) {
      // A row with a recovery point records work that happened: it is kept whatever `forget` says.
      if (forget) {
        const { rowCount } = await runner.prepared(
          `DELETE FROM ${t} WHERE client_id = $1 AND key = $2 AND lease_token = $3 AND recovery_point IS NULL`,
          fenceArgs(lease),
        );
        if (rowCount === 1) return true;
      }
      const { rowCount } = await runner.prepared(
        `UPDATE ${t} SET lease_token = NULL, lease_until = NULL
          WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3`,
        fenceArgs(lease),
      );
      return rowCount === 1;
    },

    async park(lease, { retryAfterMs }) {
      const { rowCount } = await runner.prepared(
        `UPDATE ${t} SET lease_token = NULL, lease_until = NULL, attempts = attempts + 1,
                next_attempt_at = now() + $4 * interval '1 millisecond'
          WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3`,
        [...fenceArgs(lease), retryAfterMs],
      );
      return rowCount === 1;
    },

    async sweep(limit) {
      // Served by the partial index on unfinished keys.
      const { rows } = await runner.prepared<RawRow>(
        `SELECT ${ROW} FROM ${t}
          WHERE state = 'started' AND next_attempt_at <= now() AND (lease_token IS NULL OR lease_until <= now())
          ORDER BY next_attempt_at, created_at LIMIT $1`,
        [limit],
      );
      return rows.map(toRow);
    },

    // Whole partitions are dropped, so there is no batch to size.
    async reap() {
      const orphaned = await dropDetachedPartitions(runner, schema);
      await ensurePartitions(runner, schema, plan);
      return orphaned + (await dropExpiredPartitions(runner, schema, ttlMs));
    },

    transaction: <T>(work: (tx: Tx) => Promise<T>) => runner.transaction((query) => work(txOver(query))),

    close: () => runner.close(),
  };
}

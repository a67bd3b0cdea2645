/**
 * Fenced writes on PostgreSQL: a phase's work and its recovery point under a lease, with the
 * outcome mark before it riding in the same round trips and the point after it folded into the
 * phase's own (see `fenced`).
 *
 * @module
 */
import type { OpenTransaction, Query, QueryResult, Runner, Statement } from './postgres-runner.node.js';
import type { FoldedFenced, PointCommit, PriorCommit } from '../commits.js';
import { LOST, LeaseLostError, isLeaseLost } from './lease-lost.js';
import type { Lease, Tx } from './types.js';

/** What the store builds its fenced writes from. */
export interface Fencing {
  fenced<T>(
    lease: Lease,
    work: ((tx: Tx) => Promise<T>) | undefined,
    write: (result: T | undefined, mark: PriorCommit | undefined) => Statement,
    prior?: PriorCommit,
    at?: { readonly point: string; readonly next: boolean },
  ): Promise<FoldedFenced<T>>;
  /** `oncely_point` (raises OLOST when the lease no longer holds the row) for `point`. */
  pointStatement(lease: Lease, point: PointCommit, data?: Readonly<Record<string, unknown>>): Statement;
  /** Whether the row is at `point` under `lease` (a failed round trip's phase did commit). */
  landed(lease: Lease, point: string): Promise<boolean>;
  fenceArgs(lease: Lease): string[];
  /** The application's view of a transaction. */
  txOver(query: Query): Tx;
}

/**
 * The fenced writes of the store over `runner`, in `schema`.
 *
 * @example
 * ```ts
 * const { fenced, pointStatement } = createFencing(runner, 'oncely');
 * ```
 */
export function createFencing(runner: Runner, schema: string): Fencing {
  const t = `${schema}.oncely_keys`;
  // Built once; sent as named prepared statements with bind parameters.
  const LOCK = `SELECT ${schema}.oncely_lock($1, $2, $3)`;
  const POINT = `SELECT ${schema}.oncely_point($1, $2, $3, $4, $5, $6, true, $7)`;
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
   * Work under a lease, then `write` (`oncely_point`, `oncely_finish` or `oncely_finish_after`,
   * which raise OLOST when the lease no longer holds the row). The transaction opens only when the
   * work runs its first statement:
   * - no statement: `write` alone, atomic on its own (one round trip);
   * - statements: the first goes in the same write as BEGIN and `oncely_lock` (`SELECT … FOR
   *   UPDATE` of the row under the lease, raising OLOST when the lease no longer holds it: the
   *   transaction is then aborted before the statement behind it runs, so an owner that lost its
   *   row runs none of its statements, with no wait for the check; a concurrent takeover waits for
   *   this transaction, then finds a fresh lease); `write` goes with COMMIT. (As on SQLite, JS the
   *   work runs before its first statement is not fenced; only what reaches the database is.)
   * `prior` (an outcome mark) rides in front of the first round trip as a transaction of its own,
   * raising OLOST if the lease is gone so that nothing after it runs; when the work runs no
   * statement, `write` is handed the mark and folds it into its own UPDATE (one statement, one
   * round trip). A mark with a `committed` hook goes alone, first: the hook runs after it and
   * before anything else commits. `at` is the point `write` leaves the row at (with `next`: the
   * point after the phase, EXTn_SENT, folded into its UPDATE): when the answer to the round trip
   * carrying it is lost, the row tells whether it landed.
   */
  async function fenced<T>(
    lease: Lease,
    work: ((tx: Tx) => Promise<T>) | undefined,
    write: (result: T | undefined, mark: PriorCommit | undefined) => Statement,
    prior?: PriorCommit,
    at?: { readonly point: string; readonly next: boolean },
  ): Promise<FoldedFenced<T>> {
    // A round trip whose answer was lost (connection reset) may have committed: the row says so.
    const unlessLanded = async (error: unknown): Promise<void> => {
      if (!at || isLeaseLost(error) || !(await landed(lease, at.point))) throw error;
    };
    // The mark goes out once, with whichever round trip comes first: never again after that, even
    // when that round trip failed (it may have committed, and a later copy would move the row back).
    let mark = prior ? pointStatement(lease, prior) : undefined;
    const takeMark = (): Statement | undefined => {
      const taken = mark;
      mark = undefined;
      return taken;
    };
    // A mark with a hook must be seen committed before anything after it commits, and its hook
    // may use the store: it goes alone, before the work starts.
    if (prior?.committed && !(await markAlone(takeMark()!, prior))) return LOST;
    let open: OpenTransaction | undefined;
    let opening: Promise<OpenTransaction> | undefined;
    // A statement sent after the work returned (an unawaited promise) would open a transaction
    // no one ends: refused.
    let ended = false;
    // The work sees a lost lease as the one LeaseLostError, whichever statement raised OLOST.
    const fencedOut = (error: unknown): never => {
      throw isLeaseLost(error) && !(error instanceof LeaseLostError) ? new LeaseLostError({ cause: error }) : error;
    };
    const query: Query = async <R>(sql: string, params?: readonly unknown[]) => {
      if (ended) throw new Error('postgresKeyStore: this write has ended; await every statement before the work returns');
      if (opening) return (await opening.catch(fencedOut)).query<R>(sql, params);
      const opened = runner.open({ sql: LOCK, params: fenceArgs(lease) }, takeMark(), { sql, params: params ?? [] });
      opening = opened.then(({ tx }) => (open = tx));
      // Its failure reaches the work through `opened`; it is awaited again when the work ends.
      opening.catch(() => undefined);
      const { then } = await opened.catch(fencedOut);
      if (then?.status === 'rejected') throw then.reason;
      return then!.value as QueryResult<R>;
    };
    try {
      const value = work ? await work(txOver(query)) : undefined;
      ended = true;
      if (opening) {
        const statement = write(value, undefined);
        // Awaited again: a work that caught the failure of its first statement (a lost lease, a
        // broken connection) must not get its write committed without it.
        const tx = await opening;
        await tx.commit(statement).catch(unlessLanded);
      } else {
        // The mark, if still unsent, is folded into the write: taken only once the write is built
        // (a write that throws, a refused response, leaves the mark to go alone below).
        const statement = write(value, mark ? prior : undefined);
        const carried = takeMark();
        await runner.prepared(statement.sql, statement.params).catch((error: unknown) => {
          // PostgreSQL answered with an error: the statement, the mark in it, did not commit, and
          // the mark goes alone below (it records an outcome the next attempt would otherwise
          // have to probe for). A lost answer leaves it taken: it may have committed.
          if (carried && refused(error) && !isLeaseLost(error)) mark = carried;
          return unlessLanded(error);
        });
      }
      return at?.next ? { ok: true, value: value as T, next: true } : { ok: true, value: value as T };
    } catch (error) {
      ended = true;
      // The work may fail while its first statement's BEGIN is still on the wire: wait for it, or
      // that transaction (and the row lock it takes) would never end.
      await opening?.catch(() => undefined);
      await open?.rollback();
      if (isLeaseLost(error)) return LOST;
      // A work that failed before it reached the database never sent the mark: it goes alone.
      const unsent = takeMark();
      if (unsent && !(await markAlone(unsent, prior!))) return LOST;
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

  /**
   * An ERROR PostgreSQL (or PGlite) answered a statement with: that statement and its implicit
   * transaction rolled back. Not FATAL (the session ends, possibly after a commit) nor a lost
   * connection (no answer at all).
   */
  const refused = (error: unknown): boolean => (error as { severity?: unknown } | null | undefined)?.severity === 'ERROR';

  /** `oncely_point` (raises OLOST when the lease no longer holds the row) for `point`. */
  const pointStatement = (lease: Lease, point: PointCommit, data: Readonly<Record<string, unknown>> = point.data ?? {}): Statement => ({
    sql: POINT,
    // `durable: false` is the one place a commit is relaxed: the function turns synchronous_commit
    // off for its own transaction, whether it is sent alone or with the work's COMMIT.
    params: [...fenceArgs(lease), point.recoveryPoint, JSON.stringify(data), point.leaseMs, point.durable !== false],
  });

  const fenceArgs = (lease: Lease): string[] => [lease.clientId, lease.key, lease.token];

  return { fenced, pointStatement, landed, fenceArgs, txOver };
}

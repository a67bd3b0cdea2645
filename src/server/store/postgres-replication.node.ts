/**
 * Is the primary the store writes to replicating synchronously? A key acknowledged by an
 * asynchronous primary may exist nowhere else: if that primary dies and its standby is promoted,
 * the key is gone, and the client's retry of an operation it was told succeeded runs it again (a
 * second charge). `docs/postgres-production.md` has the figures measured across a real failover.
 *
 * {@link judgeReplication} is the decision (a table below), {@link checkReplication} asks the
 * server; `oncely serve` logs its warning at startup.
 *
 * | in recovery | standbys | synchronous_commit | synchronous_standby_names | sync standbys | state             |
 * |-------------|----------|--------------------|---------------------------|---------------|-------------------|
 * | yes         | –        | –                  | –                         | –             | `standby` (warn)  |
 * | no          | 0        | –                  | empty                     | –             | `single`          |
 * | no          | ≥ 1      | off / local        | –                         | –             | `asynchronous` (warn) |
 * | no          | ≥ 1      | on / remote_*      | empty                     | –             | `asynchronous` (warn) |
 * | no          | any      | on / remote_*      | set                       | 0 (visible)   | `waiting` (warn)  |
 * | no          | ≥ 1      | on / remote_*      | set                       | ≥ 1 or hidden | `synchronous`     |
 *
 * "Hidden": a role without `pg_read_all_stats` sees `pg_stat_replication`'s rows but not their
 * `sync_state`; the settings are then trusted.
 *
 * @module
 */
import type pg from 'pg';
import { requirePeer } from '../../optional-peer.node.js';
import { createPool } from './postgres-hosts.node.js';

/**
 * What {@link judgeReplication} concluded.
 *
 * @example
 * ```ts
 * if ((await checkReplication({ connectionString: url })).state === ReplicationState.Asynchronous) alertOps();
 * ```
 */
export const ReplicationState = {
  /** Commits wait for a named standby: a failover to it loses no acknowledged key. */
  Synchronous: 'synchronous',
  /** Standbys stream, but commits do not wait for them: a failover can lose acknowledged keys. */
  Asynchronous: 'asynchronous',
  /** Standbys are named, none is connected as synchronous: commits wait (block) until one is. */
  Waiting: 'waiting',
  /** No standby at all: nothing to fail over to (and nothing to lose to one). */
  Single: 'single',
  /** The server is itself a standby (read-only): the store cannot write there. */
  Standby: 'standby',
} as const;

/** One of {@link ReplicationState}'s values. */
export type ReplicationState = (typeof ReplicationState)[keyof typeof ReplicationState];

/**
 * What the server says (one query: `pg_is_in_recovery()`, the `synchronous_*` settings and `pg_stat_replication`).
 *
 * @example
 * ```ts
 * const facts: ReplicationFacts = { inRecovery: false, standbys: 1, syncStandbys: 1, synchronousCommit: 'on', synchronousStandbyNames: 'standby1' };
 * ```
 */
export interface ReplicationFacts {
  readonly inRecovery: boolean;
  /** Rows of `pg_stat_replication`. */
  readonly standbys: number;
  /** Of those, `sync` or `quorum`; `undefined` when the role cannot see `sync_state`. */
  readonly syncStandbys: number | undefined;
  readonly synchronousCommit: string;
  readonly synchronousStandbyNames: string;
}

/**
 * The verdict: a state, and a warning to log when the state can lose or block commits.
 *
 * @example
 * ```ts
 * const { state, warning, facts } = await checkReplication({ connectionString: url });
 * console.log(state, facts.standbys, warning ?? 'ok');
 * ```
 */
export interface ReplicationReport {
  readonly state: ReplicationState;
  readonly warning: string | undefined;
  readonly facts: ReplicationFacts;
}

/** The facts, from the session the store would use (its `synchronous_commit` may be its own). */
export const REPLICATION_SQL = `SELECT pg_is_in_recovery() AS in_recovery,
  current_setting('synchronous_commit') AS synchronous_commit,
  current_setting('synchronous_standby_names') AS synchronous_standby_names,
  (SELECT count(*)::int FROM pg_stat_replication) AS standbys,
  (SELECT count(sync_state)::int FROM pg_stat_replication) AS visible,
  (SELECT count(*)::int FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS sync_standbys`;

/**
 * The state of a primary's replication, from its facts (see the module's table).
 *
 * @example
 * ```ts
 * judgeReplication({ inRecovery: false, standbys: 1, syncStandbys: 0, synchronousCommit: 'on', synchronousStandbyNames: '' }).state; // 'asynchronous'
 * ```
 */
export function judgeReplication(facts: ReplicationFacts): ReplicationReport {
  const report = (state: ReplicationState, warning?: string): ReplicationReport => ({ state, warning, facts });
  if (facts.inRecovery)
    return report(ReplicationState.Standby, 'PostgreSQL: connected to a standby (pg_is_in_recovery() = true): the key store needs the primary');
  const names = facts.synchronousStandbyNames.trim();
  const waits = !['off', 'local'].includes(facts.synchronousCommit);
  if (names === '' && facts.standbys === 0) return report(ReplicationState.Single);
  if (names === '' || !waits) {
    if (facts.standbys === 0) return report(ReplicationState.Single);
    const why = names === '' ? 'synchronous_standby_names is empty' : `synchronous_commit = ${facts.synchronousCommit}`;
    return report(
      ReplicationState.Asynchronous,
      `PostgreSQL: asynchronous replication to ${facts.standbys} standby(s) (${why}): a commit is acknowledged before any standby has it, so a failover can lose acknowledged keys and a retry then runs the operation again. Name the standby in synchronous_standby_names with synchronous_commit = on or remote_apply (docs/postgres-production.md)`,
    );
  }
  if (facts.syncStandbys === 0) {
    return report(
      ReplicationState.Waiting,
      `PostgreSQL: synchronous_standby_names = '${names}' but no standby is connected as synchronous: every commit waits until one is`,
    );
  }
  return report(ReplicationState.Synchronous);
}

/**
 * Where to ask: a connection string (a multi-host one is followed to its primary) or a pool.
 *
 * @example
 * ```ts
 * const source: ReplicationSource = { connectionString: 'postgres://oncely@db1:5432,db2:5432/payments' };
 * ```
 */
export type ReplicationSource = { readonly connectionString: string } | { readonly pool: pg.Pool };

/**
 * Asks the primary `source` reaches how it replicates, and judges it ({@link judgeReplication}).
 * `oncely serve` logs the warning at startup; an app can do the same after `migrate()`.
 *
 * @example
 * ```ts
 * import { checkReplication } from 'oncely/server/postgres';
 * const { state, warning } = await checkReplication({ connectionString: process.env.DATABASE_URL! });
 * if (warning) console.warn(warning); // state: 'asynchronous' → a failover can lose acknowledged keys
 * ```
 */
export async function checkReplication(source: ReplicationSource): Promise<ReplicationReport> {
  const pool =
    'pool' in source
      ? source.pool
      : createPool(requirePeer<typeof pg>('pg'), { connectionString: source.connectionString, max: 1, connectionTimeoutMillis: 5000 });
  try {
    const { rows } = await pool.query<{
      in_recovery: boolean;
      synchronous_commit: string;
      synchronous_standby_names: string;
      standbys: number;
      visible: number;
      sync_standbys: number;
    }>(REPLICATION_SQL);
    const row = rows[0]!;
    return judgeReplication({
      inRecovery: row.in_recovery,
      standbys: row.standbys,
      // Rows whose sync_state is hidden from this role: the count of sync ones would be a guess.
      syncStandbys: row.visible < row.standbys ? undefined : row.sync_standbys,
      synchronousCommit: row.synchronous_commit,
      synchronousStandbyNames: row.synchronous_standby_names,
    });
  } finally {
    if (!('pool' in source)) await pool.end();
  }
}

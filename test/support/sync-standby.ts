/**
 * A private PostgreSQL primary whose commits can be made to wait for a synchronous standby that
 * never connects (`synchronous_standby_names = 'nobody'`), and whose waits the test abandons as an
 * operator or a failing primary would: `pg_cancel_backend` (the COMMIT then answers success with a
 * WARNING) or `pg_terminate_backend` (a WARNING, then the session ends). Either way the commit is
 * on this primary alone: what a failover to the standby would lose.
 */
import pg from 'pg';
import { startThrowawayCluster, type ThrowawayCluster } from './pg.js';

/** How a test abandons a commit's wait for the standby. */
export type Abandon = 'cancel' | 'terminate';

export interface SyncPrimary {
  readonly url: string;
  /** From now on every commit waits for the standby (`true`), or none does (`false`, releasing those waiting). */
  waitForStandby(on: boolean): Promise<void>;
  /** Until `until` settles, abandons every commit waiting for the standby; resolves with how many were. */
  abandonWaits(how: Abandon, until: Promise<unknown>): Promise<number>;
  /** SQL as a test inspects the database (read-only: it never waits for the standby). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  destroy(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a commit on a fresh session is held past `ms` (it is waiting for the standby). */
async function commitHeld(url: string, ms: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, query_timeout: ms });
  client.on('error', () => undefined);
  await client.connect();
  try {
    // Writes WAL (a catalog entry): its commit waits like any write's.
    await client.query('CREATE TEMP TABLE sync_probe () ON COMMIT DROP');
    return false;
  } catch {
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the primary, commits not waiting yet (so that a test can migrate its schema first).
 *
 * @example
 * ```ts
 * const primary = await startSyncPrimary();
 * await primary.waitForStandby(true);
 * ```
 */
export async function startSyncPrimary(): Promise<SyncPrimary> {
  const cluster: ThrowawayCluster = await startThrowawayCluster();
  const admin = new pg.Pool({ connectionString: cluster.url, max: 2 });
  admin.on('error', () => undefined);
  const abandonAll = async (how: Abandon): Promise<number> => {
    const fn = how === 'cancel' ? 'pg_cancel_backend' : 'pg_terminate_backend';
    const { rows } = await admin.query(`SELECT ${fn}(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND pid <> pg_backend_pid()`);
    return rows.length;
  };
  return {
    url: cluster.url,
    async waitForStandby(on) {
      await admin.query(on ? "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" : 'ALTER SYSTEM RESET synchronous_standby_names');
      await admin.query('SELECT pg_reload_conf()');
      // The reload reaches the server's shared state a moment later: a commit tells when.
      for (let attempt = 0; (await commitHeld(cluster.url, 300)) !== on; attempt += 1) {
        if (attempt > 50) throw new Error(`synchronous_standby_names did not turn ${on ? 'on' : 'off'}`);
      }
      // The probe's own commit, held, is let go.
      await abandonAll('terminate');
    },
    async abandonWaits(how, until) {
      let settled = false;
      void until.finally(() => (settled = true)).catch(() => undefined);
      let abandoned = 0;
      while (!settled) {
        abandoned += await abandonAll(how);
        await sleep(20);
      }
      return abandoned;
    },
    query: async <T>(sql: string, params?: unknown[]) => (await admin.query(sql, params)).rows as T[],
    async destroy() {
      await admin.end();
      await cluster.destroy();
    },
  };
}

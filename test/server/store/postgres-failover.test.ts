/**
 * A primary and a streaming standby (Debian's PostgreSQL binaries, `bench/failover/cluster.ts`):
 * the startup replication check on the real synchronous and asynchronous setups, and a store on a
 * multi-host URL that keeps working once the primary is killed and the standby promoted. The whole
 * load across a failover, with its counts, is `bench/failover/run.sh`.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { findPgBin, startPair, type PgPair } from '../../../bench/failover/cluster.js';
import { createPool, hostList } from '../../../src/server/store/postgres-hosts.node.js';
import { checkReplication, judgeReplication, ReplicationState, type ReplicationFacts } from '../../../src/server/store/postgres-replication.node.js';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import type { AdmitInput } from '../../../src/server/store/types.js';
import { eventually, spawnServe } from '../../reference/serve-process.js';

const facts = (patch: Partial<ReplicationFacts>): ReplicationFacts => ({
  inRecovery: false,
  standbys: 1,
  syncStandbys: 1,
  synchronousCommit: 'on',
  synchronousStandbyNames: 'standby1',
  ...patch,
});

describe("judging a primary's replication", () => {
  it('is synchronous when commits wait for a named standby that is connected as sync', () => {
    expect(judgeReplication(facts({})).state).toBe(ReplicationState.Synchronous);
    expect(judgeReplication(facts({ synchronousCommit: 'remote_apply' })).warning).toBeUndefined();
    // A role without pg_read_all_stats cannot see sync_state: the settings are trusted.
    expect(judgeReplication(facts({ syncStandbys: undefined })).state).toBe(ReplicationState.Synchronous);
  });

  it('warns of asynchronous replication when standbys stream but commits do not wait for them', () => {
    const unnamed = judgeReplication(facts({ synchronousStandbyNames: ' ', syncStandbys: 0 }));
    expect([unnamed.state, unnamed.warning]).toEqual([
      ReplicationState.Asynchronous,
      expect.stringMatching(/synchronous_standby_names is empty.*lose acknowledged keys/),
    ]);
    const local = judgeReplication(facts({ synchronousCommit: 'local' }));
    expect([local.state, local.warning]).toEqual([ReplicationState.Asynchronous, expect.stringMatching(/synchronous_commit = local/)]);
  });

  it('warns that commits block when the named standby is not connected, and is quiet on a single server', () => {
    expect(judgeReplication(facts({ standbys: 0, syncStandbys: 0 })).state).toBe(ReplicationState.Waiting);
    expect(judgeReplication(facts({ standbys: 0, syncStandbys: 0, synchronousStandbyNames: '' }))).toMatchObject({
      state: ReplicationState.Single,
      warning: undefined,
    });
    expect(judgeReplication(facts({ inRecovery: true })).state).toBe(ReplicationState.Standby);
  });
});

const runnable = findPgBin() !== undefined || process.env.ONCELY_REQUIRE_PG === '1';
if (!runnable) console.warn('[pg harness] SKIPPING the primary/standby tests: no initdb installed');

describe.skipIf(!runnable)('a primary with a streaming standby', () => {
  const pairs: PgPair[] = [];
  afterAll(() => pairs.forEach((pair) => pair.destroy()));

  it('is reported asynchronous (with the warning) by default, synchronous once the standby is named', async () => {
    const async = await startPair({ synchronous: false });
    pairs.push(async);
    const sync = await startPair({ synchronous: true });
    pairs.push(sync);
    const [onAsync, onSync] = await Promise.all([checkReplication({ connectionString: async.url }), checkReplication({ connectionString: sync.url })]);
    expect([onAsync.state, onAsync.facts.standbys]).toEqual([ReplicationState.Asynchronous, 1]);
    expect(onAsync.warning).toMatch(/asynchronous replication to 1 standby/);
    expect([onSync.state, onSync.warning, onSync.facts.syncStandbys]).toEqual([ReplicationState.Synchronous, undefined, 1]);
  }, 90_000);

  it('makes oncely serve log a warning at startup on the asynchronous primary, and none on the synchronous one', async () => {
    const logged = async (url: string): Promise<{ level: number; state?: string; msg: string }> => {
      const served = await spawnServe(['--db', url, '--pg-schema', 'oncely_t_replication', '--quiet']);
      try {
        expect(await eventually(() => served.lines.some((line) => line.includes('"event":"replication"')), 15_000)).toBe(true);
        return JSON.parse(served.lines.find((line) => line.includes('"event":"replication"'))!);
      } finally {
        await served.stop();
      }
    };
    const [onAsync, onSync] = [await logged(pairs[0]!.url), await logged(pairs[1]!.url)];
    // pino: 40 is warn, 30 is info.
    expect([onAsync.level, onAsync.state, onAsync.msg]).toEqual([40, 'asynchronous', expect.stringMatching(/asynchronous replication to 1 standby/)]);
    expect([onSync.level, onSync.state]).toEqual([30, 'synchronous']);
  }, 60_000);

  it('passes over a standby listed first: a connection is kept only where pg_is_in_recovery() is false', async () => {
    const pair = pairs[0]!;
    const url = `postgres://postgres@127.0.0.1:${pair.standbyPort},127.0.0.1:${pair.primaryPort}/postgres`;
    const pool = createPool(pg, { connectionString: url, max: 2 });
    try {
      const answers = await Promise.all(
        [1, 2, 3].map(() => pool.query<{ standby: boolean; port: number }>("SELECT pg_is_in_recovery() AS standby, current_setting('port')::int AS port")),
      );
      expect(answers.map(({ rows }) => [rows[0]!.standby, rows[0]!.port])).toEqual(Array(3).fill([false, pair.primaryPort]));
      expect(hostList(url)!.current().port).toBe(pair.primaryPort);
    } finally {
      await pool.end();
    }
  });

  it('keeps a store on the host list working after the primary is killed and the standby promoted', async () => {
    const pair = pairs[1]!;
    const schema = 'oncely_t_failover';
    const store = postgresKeyStore({ connectionString: pair.url, schema, connectTimeoutMs: 1000 });
    const input = (key: string): AdmitInput => ({
      clientId: 'acme',
      key,
      requestHash: 'h',
      endpoint: 'POST /v1/payments',
      requestBody: '{}',
      leaseMs: 10_000,
      ttlMs: 3_600_000,
    });
    try {
      await store.migrate();
      expect((await store.admit(input('before'))).owned).toBe(true);
      pair.killPrimary();
      pair.promoteStandby();
      // What an orchestrator does once the only standby is gone: stop waiting for it.
      const promoted = new pg.Client({ connectionString: pair.standbyUrl });
      await promoted.connect();
      await promoted.query("ALTER SYSTEM SET synchronous_standby_names = ''");
      await promoted.query('SELECT pg_reload_conf()');
      await promoted.end();
      // The first calls may meet the dead primary's pooled connections; retried, as a client would.
      let admitted: Awaited<ReturnType<typeof store.admit>> | undefined;
      for (let attempt = 0; admitted === undefined && attempt < 20; attempt += 1) {
        admitted = await store.admit(input('after')).catch(() => undefined);
      }
      expect(admitted?.owned).toBe(true);
      // Synchronous: the key committed before the kill is on the promoted standby.
      expect((await store.load('acme', 'before'))?.state).toBe('started');
      const onPromoted = await checkReplication({ connectionString: pair.url });
      expect([onPromoted.state, onPromoted.facts.inRecovery]).toEqual([ReplicationState.Single, false]);
    } finally {
      await store.close();
    }
  }, 90_000);
});

/**
 * The PostgreSQL store's own behaviour (what the shared KeyStore contract does not cover:
 * cross-partition uniqueness, partition reaping, concurrent migrations, the database clock),
 * run by `postgres.test.ts` (a server when available) and `postgres-pglite.test.ts` (PGlite).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitsOf } from '../../../src/server/commits.js';
import type { PgBackend } from '../../support/pg.js';
import type { AdmitInput, KeyStore, Lease, StoredResponse, Tx } from '../../../src/server/store/types.js';

const input = (key: string, over: Partial<AdmitInput> = {}): AdmitInput => ({
  clientId: 'acme',
  key,
  requestHash: 'a'.repeat(64),
  endpoint: 'POST /v1/payments',
  requestBody: '{"amount":1}',
  leaseMs: 10_000,
  ttlMs: 86_400_000,
  ...over,
});

const created: StoredResponse = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reaps until `gone` holds (at most 5 passes) and sums what was removed: a pass skips a partition
 * it cannot lock within its lock timeout (autovacuum may hold it on a busy server), as the
 * periodic reaper would, and the next pass takes it.
 */
async function reapUntil(store: KeyStore, gone: () => Promise<boolean>): Promise<number> {
  let removed = 0;
  for (let pass = 0; pass < 5 && !(await gone()); pass += 1) removed += await store.reap(1000);
  return removed;
}

export function postgresStoreSuite(name: string, open: () => Promise<PgBackend>): void {
  describe(name, () => {
    let backend: PgBackend;
    let store: KeyStore & { readonly schema: string };
    const count = async (key: string): Promise<number> =>
      (await backend.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${store.schema}.oncely_keys WHERE key = $1`, [key]))[0]!.n;

    beforeAll(async () => {
      backend = await open();
      store = await backend.store();
    });
    afterAll(() => backend?.close());

    it('gives exactly one of 100 concurrent admissions of a key the ownership, and stores one row', async () => {
      const results = await Promise.all(Array.from({ length: 100 }, () => store.admit(input('race-1'))));
      expect(results.filter((r) => r.owned)).toHaveLength(1);
      expect(results.every((r) => r.row.requestHash === 'a'.repeat(64))).toBe(true);
      expect(await count('race-1')).toBe(1);
    });

    it('keeps one owner when concurrent admissions of a key would land in different partitions', async () => {
      // One-second partitions, and retentions from 0.5 s to 50 s: the 100 candidate rows fall
      // into many partitions, where the primary key alone could not see each other.
      const small = await backend.store({ partitionMs: 1000, ttlMs: 60_000 });
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => small.admit(input('boundary-1', { ttlMs: 500 + i * 500 }))),
      );
      expect(results.filter((r) => r.owned)).toHaveLength(1);
      const rows = await backend.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${small.schema}.oncely_keys`);
      expect(rows[0]!.n).toBe(1);
    });

    it('reports lease and timestamps from the database clock', async () => {
      const { row } = await store.admit(input('clock-1', { leaseMs: 10_000, ttlMs: 3_600_000 }));
      expect(row.leaseRemainingMs).toBeGreaterThan(9_000);
      expect(row.leaseRemainingMs).toBeLessThanOrEqual(10_000);
      expect(row.expiresAt - row.createdAt).toBe(3_600_000);
      const loaded = await store.load('acme', 'clock-1');
      expect(loaded?.createdAt).toBe(row.createdAt);
    });

    it('refuses a takeover while the lease is fresh and grants exactly one once it has expired', async () => {
      await store.admit(input('take-1', { leaseMs: 100 }));
      expect(await store.takeOver('acme', 'take-1', 10_000)).toBeNull();
      await sleep(150);
      const winners = (await Promise.all(Array.from({ length: 20 }, () => store.takeOver('acme', 'take-1', 10_000)))).filter(Boolean);
      expect(winners).toHaveLength(1);
    });

    it('commits nothing for an owner whose lease was taken over (fencing)', async () => {
      const first = await store.admit(input('fence-1', { leaseMs: 50 }));
      if (!first.owned) throw new Error('not owned');
      await sleep(100);
      const second = await store.takeOver('acme', 'fence-1', 10_000);
      expect(second).not.toBeNull();
      const stale = await store.commitPhase(first.lease, { recoveryPoint: 'H1_DONE', data: { by: 'stale' }, leaseMs: 10_000 });
      expect(stale.ok).toBe(false);
      expect(await store.finish(first.lease, created)).toEqual({ ok: false });
      const fresh = await store.commitPhase(second!, { recoveryPoint: 'H1_DONE', data: { by: 'fresh' }, leaseMs: 10_000 });
      expect(fresh.ok).toBe(true);
      expect((await store.load('acme', 'fence-1'))?.data).toEqual({ by: 'fresh' });
    });

    it('tells the work of an owner whose lease was taken over why its statements fail: a LeaseLostError, each time', async () => {
      const first = await store.admit(input('fence-2', { leaseMs: 50 }));
      if (!first.owned) throw new Error('not owned');
      await sleep(100);
      expect(await store.takeOver('acme', 'fence-2', 10_000)).not.toBeNull();
      const caught: unknown[] = [];
      const stale = await store.commitPhase(first.lease, { recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx: Tx) => {
        // An app that logs the failure and carries on, as handlers do.
        for (let i = 0; i < 2; i += 1) await tx.get('SELECT 1 AS one').catch((error: unknown) => caught.push(error));
      });
      expect(stale).toEqual({ ok: false });
      expect(caught).toHaveLength(2);
      for (const error of caught) expect(error).toMatchObject({ name: 'LeaseLostError', code: 'OLOST', message: 'the lease no longer holds the key row' });
      expect((await store.load('acme', 'fence-2'))?.recoveryPoint).toBeNull();
    });

    it('commits a phase with its work atomically, and neither when the work throws', async () => {
      await store.transaction((tx) => tx.run(`CREATE TABLE IF NOT EXISTS ${store.schema}.work_log (note text)`));
      const admitted = await store.admit(input('phase-1'));
      if (!admitted.owned) throw new Error('not owned');
      await expect(
        store.commitPhase(admitted.lease, { recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx) => {
          await tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, ['lost']);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await store.load('acme', 'phase-1'))?.recoveryPoint).toBeNull();
      const done = await store.commitPhase(
        admitted.lease,
        { recoveryPoint: 'H1_DONE', data: { a: 1 }, dataFrom: (n) => ({ rows: n }), leaseMs: 10_000 },
        (tx) => tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, ['kept']),
      );
      expect(done).toEqual({ ok: true, value: 1 });
      const notes = await backend.query<{ note: string }>(`SELECT note FROM ${store.schema}.work_log`);
      expect(notes.map((n) => n.note)).toEqual(['kept']);
      expect((await store.load('acme', 'phase-1'))?.data).toEqual({ a: 1, rows: 1 });
    });

    it('writes EXTn_SENT as the phase\'s own point: when that write fails, nothing of the phase commits and the call fails', async () => {
      await store.transaction((tx) => tx.run(`CREATE TABLE IF NOT EXISTS ${store.schema}.work_log (note text)`));
      // A lease of 1e300 ms overflows PostgreSQL's interval: the write of EXT1_SENT, and with it
      // the phase's transaction, fails.
      const broken = { recoveryPoint: 'EXT1_SENT', leaseMs: 1e300, durable: true };
      const note = (text: string) => (tx: Tx) => tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, [text]);
      await expect(commitsOf(store).admit(input('next-1'), { commit: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, durable: false, next: broken }, work: note('h1') })).rejects.toThrow();
      expect(await store.load('acme', 'next-1')).toBeUndefined();
      const admitted = await commitsOf(store).admit(input('next-2'), { commit: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, durable: false }, work: note('h1') });
      if (!admitted.owned) throw new Error('not owned');
      for (const work of [note('h2'), undefined]) {
        const point = work ? 'H2_DONE' : 'H3_DONE';
        await expect(commitsOf(store).commitPhase(admitted.lease, { recoveryPoint: point, leaseMs: 10_000, data: { [point]: true }, next: broken }, work), point).rejects.toThrow();
        expect(await store.load('acme', 'next-2'), point).toMatchObject({ recoveryPoint: 'H1_DONE', data: {} });
      }
      // The lease still holds: the same phase without the broken point commits, its point and data with it.
      const sent = { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000, durable: true, data: { sent: 1 } };
      expect(await commitsOf(store).commitPhase(admitted.lease, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, data: { h2: true }, next: sent }, note('h2-again'))).toEqual({ ok: true, value: 1, next: true });
      expect(await store.load('acme', 'next-2')).toMatchObject({ recoveryPoint: 'EXT1_SENT', data: { h2: true, sent: 1 } });
      const notes = await backend.query<{ note: string }>(`SELECT note FROM ${store.schema}.work_log WHERE note LIKE 'h%' ORDER BY note`);
      expect(notes.map((n) => n.note)).toEqual(['h1', 'h2-again']);
    });

    it('writes a mark alone when PostgreSQL refuses the statement it was folded into (a phase or final response with no statement)', async () => {
      const mark = { recoveryPoint: 'EXT1_DONE', data: { charge: 'ch_1' }, leaseMs: 10_000, durable: false };
      const cases = [
        // NUL cannot be stored in text (22021), nor \u0000 in jsonb (22P05): the server answers ERROR.
        { key: 'refused-finish', run: (lease: Lease) => commitsOf(store).finish(lease, { status: 201, headers: {}, body: 'a\u0000b' }, undefined, mark) },
        { key: 'refused-phase', run: (lease: Lease) => commitsOf(store).commitPhase(lease, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, data: { bad: 'a\u0000b' }, prior: mark }) },
      ];
      for (const { key, run } of cases) {
        const admitted = await store.admit(input(key));
        if (!admitted.owned) throw new Error('not owned');
        expect((await store.commitPhase(admitted.lease, { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 })).ok).toBe(true);
        await expect(run(admitted.lease), key).rejects.toThrow();
        // The outcome stays recorded: the next attempt resumes after the call instead of probing it.
        expect(await store.load('acme', key), key).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_DONE', data: { charge: 'ch_1' } });
      }
    });

    it('stores the final response verbatim and clears the lease on finish', async () => {
      const admitted = await store.admit(input('finish-1'));
      if (!admitted.owned) throw new Error('not owned');
      expect((await store.finish(admitted.lease, () => created, async () => 'x')).ok).toBe(true);
      const row = await store.load('acme', 'finish-1');
      expect(row).toMatchObject({ state: 'finished', response: created, leaseRemainingMs: null });
      const again = await store.admit(input('finish-1'));
      expect(again.owned).toBe(false);
      expect(again.row.response).toEqual(created);
    });

    it('keeps the stored headers in their original order (a replay writes them as first sent)', async () => {
      const admitted = await store.admit(input('order-1'));
      if (!admitted.owned) throw new Error('not owned');
      const headers = { 'content-type': 'application/json', location: '/v1/payments/p1', 'idempotency-key': 'order-1' };
      await store.finish(admitted.lease, { status: 201, headers, body: '{}' });
      expect(Object.keys((await store.load('acme', 'order-1'))!.response!.headers)).toEqual(Object.keys(headers));
      expect(Object.keys((await store.admit(input('order-1'))).row.response!.headers)).toEqual(Object.keys(headers));
    });

    it('forgets a released row with no recovery point and keeps one with progress', async () => {
      const bare = await store.admit(input('release-1'));
      if (!bare.owned) throw new Error('not owned');
      expect(await store.release(bare.lease, { forget: true })).toBe(true);
      expect(await store.load('acme', 'release-1')).toBeUndefined();
      const progressed = await store.admit(input('release-2'));
      if (!progressed.owned) throw new Error('not owned');
      await store.commitPhase(progressed.lease, { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      expect(await store.release(progressed.lease, { forget: true })).toBe(true);
      expect(await store.load('acme', 'release-2')).toMatchObject({ recoveryPoint: 'EXT1_SENT', leaseRemainingMs: null });
    });

    it('hides a parked row from sweeps until its retry time but lets a client retry take it over', async () => {
      const sweeper = await backend.store();
      const admitted = await sweeper.admit(input('park-1'));
      if (!admitted.owned) throw new Error('not owned');
      expect(await sweeper.sweep(10)).toHaveLength(0);
      expect(await sweeper.park(admitted.lease, { retryAfterMs: 300 })).toBe(true);
      expect(await sweeper.sweep(10)).toHaveLength(0);
      await sleep(350);
      const swept = await sweeper.sweep(10);
      expect(swept.map((r) => [r.key, r.attempts])).toEqual([['park-1', 1]]);
      expect(await sweeper.takeOver('acme', 'park-1', 10_000)).not.toBeNull();
      expect(await sweeper.sweep(10)).toHaveLength(0);
    });

    it('reaps keys past their retention by dropping their partition, keeping younger and in-flight keys', async () => {
      const reaped = await backend.store({ partitionMs: 1000, ttlMs: 60_000 });
      const old = await reaped.admit(input('old-finished', { ttlMs: 100 }));
      const inflight = await reaped.admit(input('old-started', { ttlMs: 100 }));
      const young = await reaped.admit(input('young', { ttlMs: 60_000 }));
      if (!old.owned || !inflight.owned || !young.owned) throw new Error('not owned');
      await reaped.finish(old.lease, created);
      await reaped.finish(young.lease, created);
      const partitionOf = async (key: string) =>
        (await backend.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM ${reaped.schema}.oncely_keys WHERE key = $1`, [key]))[0]!.p;
      const oldPartition = await partitionOf('old-finished');
      await sleep(1200); // the old keys' one-second partition is now wholly past its range
      expect(await reapUntil(reaped, async () => (await reaped.load('acme', 'old-finished')) === undefined)).toBe(1);
      expect(await reaped.load('acme', 'old-finished')).toBeUndefined();
      expect(await reaped.load('acme', 'young')).toMatchObject({ state: 'finished', response: created });
      const kept = await reaped.load('acme', 'old-started');
      expect(kept).toMatchObject({ state: 'started' });
      expect((await backend.query<{ r: string | null }>(`SELECT to_regclass($1)::text AS r`, [oldPartition]))[0]!.r).toBeNull();
      // The in-flight key's owner still holds it.
      expect((await reaped.finish(inflight.lease, created)).ok).toBe(true);
    });

    it('drops each expired partition once when several instances reap at the same time, and finishes a half-done drop', async () => {
      const first = await backend.store({ partitionMs: 1000, ttlMs: 10_000 });
      const second = backend.open(first.schema, { partitionMs: 1000, ttlMs: 10_000 });
      for (const key of ['r1', 'r2', 'r3']) {
        const admitted = await first.admit(input(key, { ttlMs: 50 }));
        if (admitted.owned) await first.finish(admitted.lease, created);
      }
      await sleep(1200);
      const removed = await Promise.all([first.reap(100), second.reap(100)]);
      const gone = async () => (await first.load('acme', 'r3')) === undefined;
      expect(removed[0] + removed[1] + (await reapUntil(first, gone))).toBe(3);
      for (const key of ['r1', 'r2', 'r3']) expect(await first.load('acme', key)).toBeUndefined();

      // An instance that died between DETACH and DROP leaves a detached table: the next pass drops it.
      const orphan = await first.admit(input('r4', { ttlMs: 50 }));
      if (orphan.owned) await first.finish(orphan.lease, created);
      await sleep(1200);
      const [{ p }] = await backend.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM ${first.schema}.oncely_keys WHERE key = 'r4'`) as [{ p: string }];
      const name = p.includes('.') ? p : `${first.schema}.${p}`;
      await backend.query(`ALTER TABLE ${first.schema}.oncely_keys DETACH PARTITION ${name}`);
      expect(await reapUntil(first, async () => (await backend.query<{ r: string | null }>(`SELECT to_regclass($1)::text AS r`, [name]))[0]!.r === null)).toBe(1);
      expect((await backend.query<{ r: string | null }>(`SELECT to_regclass($1)::text AS r`, [name]))[0]!.r).toBeNull();
    });

    it('applies migrations once when several instances start at the same time', async () => {
      const schema = backend.newSchema();
      const peers = Array.from({ length: 4 }, () => backend.open(schema));
      await Promise.all(peers.map((peer) => peer.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS payments_probe (id text PRIMARY KEY)' })));
      // Each migration once: as many rows as versions, numbered 1..n.
      const versions = await backend.query<{ n: number; distinct_versions: number; top: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT version)::int AS distinct_versions, max(version) AS top FROM ${schema}.oncely_schema_version`,
      );
      expect(versions[0]).toEqual({ n: 1, distinct_versions: 1, top: 1 });
      const probe = await backend.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'payments_probe'`, [schema]);
      expect(probe[0]!.n).toBe(1);
      const admitted = await peers[3]!.admit(input('after-migrate'));
      expect(admitted.owned).toBe(true);
    });
  });
}

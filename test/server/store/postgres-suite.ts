/**
 * The PostgreSQL store's own behaviour (what the shared KeyStore contract does not cover:
 * admissions that wait for an owner's commit, reaping from several instances, concurrent
 * migrations, the database clock),
 * run by `postgres.test.ts` (a server when available) and `postgres-pglite.test.ts` (PGlite).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
      expect(results.every((r) => r.row!.requestHash === 'a'.repeat(64))).toBe(true);
      expect(await count('race-1')).toBe(1);
    });

    it("answers duplicates that waited for the owner's COMMIT with the row at its first recovery point", async () => {
      // The owner's transaction holds its new row while its first phase runs: the duplicates'
      // INSERTs wait for it, and their statements' snapshots predate its COMMIT, so each must
      // read the row again to answer.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started!: () => void;
      const working = new Promise<void>((resolve) => (started = resolve));
      const owner = store.admit(input('wait-1'), {
        phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, dataFrom: (v: number | undefined) => ({ v }) },
        work: async (tx: Tx) => {
          await tx.run(`SELECT 1`);
          started();
          await gate;
          return 7;
        },
      });
      await working;
      const duplicates = Array.from({ length: 5 }, () => store.admit(input('wait-1')));
      await sleep(200); // the duplicates reach the database and wait on the owner's row
      release();
      const owned = await owner;
      expect(owned.owned).toBe(true);
      for (const duplicate of await Promise.all(duplicates)) {
        expect(duplicate.owned).toBe(false);
        expect(duplicate.row).toMatchObject({ state: 'started', recoveryPoint: 'H1_DONE', data: { v: 7 } });
      }
      expect(await count('wait-1')).toBe(1);
    });

    it('reports lease and timestamps from the database clock', async () => {
      const row = (await store.admit(input('clock-1', { leaseMs: 10_000, ttlMs: 3_600_000 }))).row!;
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
      const stale = await store.write(first.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { by: 'stale' }, leaseMs: 10_000 });
      expect(stale.ok).toBe(false);
      expect(await store.write(first.lease, { kind: 'finish', response: created })).toEqual({ ok: false });
      const fresh = await store.write(second!, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { by: 'fresh' }, leaseMs: 10_000 });
      expect(fresh.ok).toBe(true);
      expect((await store.load('acme', 'fence-1'))?.data).toEqual({ by: 'fresh' });
    });

    it('tells the work of an owner whose lease was taken over why its statements fail: a LeaseLostError, each time', async () => {
      const first = await store.admit(input('fence-2', { leaseMs: 50 }));
      if (!first.owned) throw new Error('not owned');
      await sleep(100);
      expect(await store.takeOver('acme', 'fence-2', 10_000)).not.toBeNull();
      const caught: unknown[] = [];
      const stale = await store.write(first.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx: Tx) => {
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
        store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx) => {
          await tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, ['lost']);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await store.load('acme', 'phase-1'))?.recoveryPoint).toBeNull();
      const done = await store.write(
        admitted.lease,
        { kind: 'phase', recoveryPoint: 'H1_DONE', data: { a: 1 }, dataFrom: (n) => ({ rows: n }), leaseMs: 10_000 },
        (tx) => tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, ['kept']),
      );
      expect(done).toEqual({ ok: true, value: 1 });
      const notes = await backend.query<{ note: string }>(`SELECT note FROM ${store.schema}.work_log`);
      expect(notes.map((n) => n.note)).toEqual(['kept']);
      expect((await store.load('acme', 'phase-1'))?.data).toEqual({ a: 1, rows: 1 });
    });

    it("writes EXTn_SENT as the phase's own point: when that write fails, nothing of the phase commits and the call fails", async () => {
      await store.transaction((tx) => tx.run(`CREATE TABLE IF NOT EXISTS ${store.schema}.work_log (note text)`));
      // A lease of 1e300 ms overflows PostgreSQL's interval: the write of the phase with EXT1_SENT
      // after it, and with it the phase's transaction, fails.
      const broken = { leaseMs: 1e300, after: { recoveryPoint: 'EXT1_SENT' } };
      const note = (text: string) => (tx: Tx) => tx.run(`INSERT INTO ${store.schema}.work_log (note) VALUES ($1)`, [text]);
      await expect(store.admit(input('next-1'), { phase: { recoveryPoint: 'H1_DONE', ...broken }, work: note('h1') })).rejects.toThrow();
      expect(await store.load('acme', 'next-1')).toBeUndefined();
      const admitted = await store.admit(input('next-2'), { phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, work: note('h1') });
      if (!admitted.owned) throw new Error('not owned');
      for (const work of [note('h2'), undefined]) {
        const point = work ? 'H2_DONE' : 'H3_DONE';
        await expect(store.write(admitted.lease, { kind: 'phase', recoveryPoint: point, data: { [point]: true }, ...broken }, work), point).rejects.toThrow();
        expect(await store.load('acme', 'next-2'), point).toMatchObject({ recoveryPoint: 'H1_DONE', data: {} });
      }
      // The lease still holds: the same phase with a valid lease commits, its point and data with it.
      const sent = { recoveryPoint: 'EXT1_SENT', data: { sent: 1 } };
      expect(
        await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, data: { h2: true }, after: sent }, note('h2-again')),
      ).toEqual({ ok: true, value: 1 });
      expect(await store.load('acme', 'next-2')).toMatchObject({ recoveryPoint: 'EXT1_SENT', data: { h2: true, sent: 1 } });
      const notes = await backend.query<{ note: string }>(`SELECT note FROM ${store.schema}.work_log WHERE note LIKE 'h%' ORDER BY note`);
      expect(notes.map((n) => n.note)).toEqual(['h1', 'h2-again']);
    });

    it('commits nothing of a statement PostgreSQL refuses, the mark folded into it included; the mark then commits alone', async () => {
      const mark = { recoveryPoint: 'EXT1_DONE', data: { charge: 'ch_1' } };
      const cases = [
        // NUL cannot be stored in text (22021), nor \u0000 in jsonb (22P05): the server answers ERROR.
        {
          key: 'refused-finish',
          run: (lease: Lease) => store.write(lease, { kind: 'finish', response: { status: 201, headers: {}, body: 'a\u0000b' }, before: mark }),
        },
        {
          key: 'refused-phase',
          run: (lease: Lease) => store.write(lease, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, data: { bad: 'a\u0000b' }, before: mark }),
        },
      ];
      for (const { key, run } of cases) {
        const admitted = await store.admit(input(key));
        if (!admitted.owned) throw new Error('not owned');
        expect((await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 })).ok).toBe(true);
        await expect(run(admitted.lease), key).rejects.toThrow();
        expect(await store.load('acme', key), key).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: {} });
        // The runner then commits the mark alone (phases.ts): the next attempt resumes after the call.
        expect(await store.write(admitted.lease, { kind: 'phase', ...mark, leaseMs: 10_000 }), key).toEqual({ ok: true, value: undefined });
        expect(await store.load('acme', key), key).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_DONE', data: { charge: 'ch_1' } });
      }
    });

    it('stores the final response verbatim and clears the lease on finish', async () => {
      const admitted = await store.admit(input('finish-1'));
      if (!admitted.owned) throw new Error('not owned');
      expect((await store.write(admitted.lease, { kind: 'finish', response: () => created }, async () => 'x')).ok).toBe(true);
      const row = await store.load('acme', 'finish-1');
      expect(row).toMatchObject({ state: 'finished', response: created, leaseRemainingMs: null });
      const again = await store.admit(input('finish-1'));
      expect(again.owned).toBe(false);
      expect(again.row!.response).toEqual(created);
    });

    it('keeps the stored headers in their original order (a replay writes them as first sent)', async () => {
      const admitted = await store.admit(input('order-1'));
      if (!admitted.owned) throw new Error('not owned');
      const headers = { 'content-type': 'application/json', location: '/v1/payments/p1', 'idempotency-key': 'order-1' };
      await store.write(admitted.lease, { kind: 'finish', response: { status: 201, headers, body: '{}' } });
      expect(Object.keys((await store.load('acme', 'order-1'))!.response!.headers)).toEqual(Object.keys(headers));
      expect(Object.keys((await store.admit(input('order-1'))).row!.response!.headers)).toEqual(Object.keys(headers));
    });

    it('forgets a released row with no recovery point and keeps one with progress', async () => {
      const bare = await store.admit(input('release-1'));
      if (!bare.owned) throw new Error('not owned');
      expect((await store.write(bare.lease, { kind: 'release', forget: true })).ok).toBe(true);
      expect(await store.load('acme', 'release-1')).toBeUndefined();
      const progressed = await store.admit(input('release-2'));
      if (!progressed.owned) throw new Error('not owned');
      await store.write(progressed.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      expect((await store.write(progressed.lease, { kind: 'release', forget: true })).ok).toBe(true);
      expect(await store.load('acme', 'release-2')).toMatchObject({ recoveryPoint: 'EXT1_SENT', leaseRemainingMs: null });
    });

    it('hides a parked row from sweeps until its retry time but lets a client retry take it over', async () => {
      const sweeper = await backend.store();
      const admitted = await sweeper.admit(input('park-1'));
      if (!admitted.owned) throw new Error('not owned');
      expect(await sweeper.sweep!(10)).toHaveLength(0);
      expect((await sweeper.write(admitted.lease, { kind: 'park', retryAfterMs: 300 })).ok).toBe(true);
      expect(await sweeper.sweep!(10)).toHaveLength(0);
      await sleep(350);
      const swept = await sweeper.sweep!(10);
      expect(swept.map((r) => [r.key, r.attempts])).toEqual([['park-1', 1]]);
      expect(await sweeper.takeOver('acme', 'park-1', 10_000)).not.toBeNull();
      expect(await sweeper.sweep!(10)).toHaveLength(0);
    });

    it('reaps finished keys past their retention, keeping younger and in-flight keys', async () => {
      const reaped = await backend.store();
      const old = await reaped.admit(input('old-finished', { ttlMs: 100 }));
      const inflight = await reaped.admit(input('old-started', { ttlMs: 100 }));
      const young = await reaped.admit(input('young', { ttlMs: 60_000 }));
      if (!old.owned || !inflight.owned || !young.owned) throw new Error('not owned');
      await reaped.write(old.lease, { kind: 'finish', response: created });
      await reaped.write(young.lease, { kind: 'finish', response: created });
      await sleep(150);
      expect(await reaped.reap!(1000)).toBe(1);
      expect(await reaped.reap!(1000)).toBe(0);
      expect(await reaped.load('acme', 'old-finished')).toBeUndefined();
      expect(await reaped.load('acme', 'young')).toMatchObject({ state: 'finished', response: created });
      expect(await reaped.load('acme', 'old-started')).toMatchObject({ state: 'started' });
      // The in-flight key's owner still holds it.
      expect((await reaped.write(inflight.lease, { kind: 'finish', response: created })).ok).toBe(true);
    });

    it('removes each expired key once when several instances reap at the same time', async () => {
      const first = await backend.store();
      const second = backend.open(first.schema);
      const keys = Array.from({ length: 40 }, (_, i) => `r${i}`);
      for (const key of keys) {
        const admitted = await first.admit(input(key, { ttlMs: 50 }));
        if (admitted.owned) await first.write(admitted.lease, { kind: 'finish', response: created });
      }
      await sleep(100);
      let removed = 0;
      for (let pass = 0; pass < 10; pass += 1) {
        const [a, b] = await Promise.all([first.reap!(7), second.reap!(7)]);
        expect(a).toBeLessThanOrEqual(7);
        expect(b).toBeLessThanOrEqual(7);
        removed += a + b;
      }
      expect(removed).toBe(keys.length);
      for (const key of keys) expect(await first.load('acme', key)).toBeUndefined();
    });

    it('refuses, saying why, a schema holding the partitioned key table of an earlier development build', async () => {
      const schema = backend.newSchema();
      await backend.query(`CREATE SCHEMA ${schema}`);
      await backend.query(`CREATE TABLE ${schema}.oncely_schema_version (version int NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await backend.query(`INSERT INTO ${schema}.oncely_schema_version (version) VALUES (1)`);
      await backend.query(
        `CREATE TABLE ${schema}.oncely_keys (client_id text, key text, expires_at timestamptz, PRIMARY KEY (client_id, key, expires_at)) PARTITION BY RANGE (expires_at)`,
      );
      await expect(backend.open(schema).migrate?.()).rejects.toThrow(/partitioned key table of a development build/);
    });

    it('applies migrations once when several instances start at the same time', async () => {
      const schema = backend.newSchema();
      const peers = Array.from({ length: 4 }, () => backend.open(schema));
      await Promise.all(peers.map((peer) => peer.migrate?.({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS payments_probe (id text PRIMARY KEY)' })));
      // Each migration once: as many rows as versions, numbered 1..n.
      const versions = await backend.query<{ n: number; distinct_versions: number; top: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT version)::int AS distinct_versions, max(version) AS top FROM ${schema}.oncely_schema_version`,
      );
      expect(versions[0]).toEqual({ n: 2, distinct_versions: 2, top: 2 });
      const probe = await backend.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'payments_probe'`, [
        schema,
      ]);
      expect(probe[0]!.n).toBe(1);
      const admitted = await peers[3]!.admit(input('after-migrate'));
      expect(admitted.owned).toBe(true);
    });
  });
}

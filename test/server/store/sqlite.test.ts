import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';
import type { Tx } from '../../../src/server/store/types.js';
import { availableDrivers } from '../../../src/sqlite/driver.node.js';
import { describeKeyStore } from '../../../src/server/testing.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
// On every driver this Node can load (test/sqlite/driver.test.ts checks that the expected ones are here).
for (const driver of availableDrivers()) {
  const file = () => sqliteKeyStore({ path: join(dir, `store-${(n += 1)}.db`), driver });
  // The shipped suites, from `oncely/server/testing` (its source), as a store author runs them.
  describeKeyStore(`sqlite on ${driver} (in memory)`, async () => sqliteKeyStore({ path: ':memory:', driver }), { suites: ['core', 'lifecycle'] });
  describeKeyStore(`sqlite on ${driver} (file, WAL)`, async () => file());
}

describe('sqliteKeyStore response cap', () => {
  it('refuses to store a response body over maxResponseBytes and commits nothing', async () => {
    const store = sqliteKeyStore({ path: ':memory:', maxResponseBytes: 10 });
    await store.migrate();
    const admitted = await store.admit({
      clientId: 'acme',
      key: 'k',
      requestHash: 'h',
      endpoint: 'POST /x',
      requestBody: '{}',
      leaseMs: 10_000,
      ttlMs: 60_000,
    });
    if (!admitted.owned) throw new Error('not owned');
    await expect(store.write(admitted.lease, { kind: 'finish', response: { status: 200, headers: {}, body: 'x'.repeat(11) } })).rejects.toThrow(
      /maxResponseBytes/,
    );
    expect((await store.load('acme', 'k'))?.state).toBe('started');
    expect((await store.write(admitted.lease, { kind: 'finish', response: { status: 200, headers: {}, body: 'x'.repeat(10) } })).ok).toBe(true);
    await store.close();
  });
});

describe('sqliteKeyStore group commit', () => {
  const admission = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });
  // Frames in the WAL file, from its size (header 32 bytes, each frame 24 + page size). Nothing
  // checkpoints during these tests (far below the 1000-page autocheckpoint), so the file only grows.
  const walFrames = (path: string): number => Math.max(0, (statSync(`${path}-wal`).size - 32) / (24 + 4096));

  it('commits writes issued together in one transaction: 20 admissions write fewer WAL frames than 20 commits would', async () => {
    const path = join(dir, 'group-frames.db');
    const store = sqliteKeyStore({ path });
    await store.migrate();
    const before = walFrames(path);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.admit(admission(`g${i}`))));
    expect(results.every((r) => r.owned)).toBe(true);
    // Every commit appends at least one frame; one commit of 20 small rows touches a few pages.
    expect(walFrames(path) - before).toBeLessThan(20);
    for (let i = 0; i < 20; i += 1) expect((await store.load('acme', `g${i}`))?.state).toBe('started');
    await store.close();
  });

  it('rolls a failing write of a group back alone: the writes around it commit, its own rows are gone', async () => {
    const store = sqliteKeyStore({ path: join(dir, 'group-failure.db') });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS t (x TEXT PRIMARY KEY);', postgres: '' });
    const insert = (x: string, fail: boolean) =>
      store.transaction(async (tx) => {
        await tx.run('INSERT INTO t (x) VALUES ($1)', [x]);
        if (fail) throw new Error(`work ${x} failed`);
        return x;
      });
    const settled = await Promise.allSettled([insert('a', false), store.admit(admission('k-mid')), insert('b', true), insert('c', false)]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({ message: 'work b failed' });
    const rows = await store.transaction((tx) => tx.all<{ x: string }>('SELECT x FROM t ORDER BY x'));
    expect(rows.map((r) => r.x)).toEqual(['a', 'c']);
    expect((await store.load('acme', 'k-mid'))?.state).toBe('started');
    await store.close();
  });

  it('fences each write of a group on its own: a lost lease in the group commits nothing, the others commit', async () => {
    const store = sqliteKeyStore({ path: join(dir, 'group-fence.db') });
    await store.migrate();
    const mine = await store.admit(admission('k-mine'));
    const stale = await store.admit(admission('k-stale'));
    if (!mine.owned || !stale.owned) throw new Error('not owned');
    const forged = { ...stale.lease, token: 'not-the-token' };
    const [ok, fenced] = await Promise.all([
      store.write(mine.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { a: 1 }, leaseMs: 10_000 }),
      store.write(forged, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { a: 2 }, leaseMs: 10_000 }),
    ]);
    expect([ok.ok, fenced.ok]).toEqual([true, false]);
    expect((await store.load('acme', 'k-mine'))?.recoveryPoint).toBe('H1_DONE');
    expect((await store.load('acme', 'k-stale'))?.recoveryPoint).toBeNull();
    await store.close();
  });
});

describe('sqliteKeyStore group commit: failure paths', () => {
  const admission = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });

  it('runs a write issued just before close() instead of dropping it', async () => {
    const path = join(dir, 'close-queued.db');
    const store = sqliteKeyStore({ path });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS t (x TEXT PRIMARY KEY);', postgres: '' });
    const write = store.transaction((tx) => tx.run("INSERT INTO t (x) VALUES ('a')"));
    await store.close();
    await expect(write).resolves.toBe(1);
    const reopened = sqliteKeyStore({ path });
    expect(await reopened.transaction((tx) => tx.all('SELECT x FROM t'))).toEqual([{ x: 'a' }]);
    await reopened.close();
  });

  it('commits no recovery point without its work when SQLite rolled the transaction back under work that swallowed the error', async () => {
    const store = sqliteKeyStore({ path: join(dir, 'swallowed-full.db') });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS big (b BLOB); CREATE TABLE IF NOT EXISTS work (w TEXT);', postgres: '' });
    const admitted = await store.admit(admission('k-full'));
    if (!admitted.owned) throw new Error('not owned');
    const codes: string[] = [];
    const phase = store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx) => {
      await tx.run("INSERT INTO work (w) VALUES ('H1 work')");
      const pages = (await tx.get<{ page_count: number }>('PRAGMA page_count'))!.page_count;
      await tx.get(`PRAGMA max_page_count = ${pages}`);
      try {
        // SQLITE_FULL on a one-row insert: SQLite rolls back the whole transaction.
        await tx.run('INSERT INTO big (b) VALUES (zeroblob(1000000))');
      } catch (error) {
        codes.push((error as { code?: string }).code ?? '?');
      }
      await tx.get('PRAGMA max_page_count = 1073741823');
    });
    const other = store.admit(admission('k-other'));
    const settled = await Promise.allSettled([phase, other]);
    expect(codes).toEqual(['SQLITE_FULL']);
    expect(settled[0].status).toBe('rejected');
    // Nothing of the phase is stored: no H1_DONE without the H1 work.
    expect((await store.load('acme', 'k-full'))?.recoveryPoint).toBeNull();
    expect(await store.transaction((tx) => tx.all('SELECT w FROM work'))).toEqual([]);
    // The other request of the group either committed whole or failed whole (a 503, retried).
    const otherRow = await store.load('acme', 'k-other');
    expect(settled[1].status === 'fulfilled' ? otherRow?.state : otherRow).toBe(settled[1].status === 'fulfilled' ? 'started' : undefined);
    await store.close();
  });

  it('admits by INSERT before the first phase runs: a row that cannot be written runs no work, a duplicate in the same group never runs it, and the work sees its row', async () => {
    const store = sqliteKeyStore({ path: join(dir, 'admit-first.db') });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS work (w TEXT);', postgres: '' });
    await store.transaction((tx) =>
      tx.run("CREATE TRIGGER refuse_row BEFORE INSERT ON oncely_keys WHEN NEW.key = 'k-refused' BEGIN SELECT RAISE(ABORT, 'no room'); END"),
    );
    const ran: string[] = [];
    const first = (note: string) => ({
      phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, dataFrom: () => ({ note }), after: { recoveryPoint: 'EXT1_SENT' } },
      work: async (tx: Tx) => {
        ran.push(note);
        // The key's row exists before the work (an app may point at it).
        const own = await tx.get<{ n: number }>("SELECT count(*) AS n FROM oncely_keys WHERE key LIKE 'k-%' AND state = 'started' AND recovery_point IS NULL");
        await tx.run('INSERT INTO work (w) VALUES ($1)', [`${note}:${own?.n}`]);
        return note;
      },
    });
    // Three admissions in one group: the refused one is undone alone.
    const [refused, owned, duplicate] = await Promise.allSettled([
      store.admit(admission('k-refused'), first('refused')),
      store.admit(admission('k-owned'), first('owned')),
      store.admit(admission('k-owned'), first('duplicate')),
    ]);
    expect(refused.status).toBe('rejected');
    expect(owned.status === 'fulfilled' && owned.value.owned && owned.value.first).toEqual({ value: 'owned' });
    expect(duplicate.status === 'fulfilled' && duplicate.value).toMatchObject({ owned: false, row: { recoveryPoint: 'EXT1_SENT', data: { note: 'owned' } } });
    expect(ran).toEqual(['owned']);
    expect(await store.load('acme', 'k-refused')).toBeUndefined();
    expect(await store.load('acme', 'k-owned')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: { note: 'owned' } });
    expect(await store.transaction((tx) => tx.all('SELECT w FROM work'))).toEqual([{ w: 'owned:1' }]);
    await store.close();
  });

  it('stores no key when SQLite rolled the admission back under a first phase whose work swallowed the error', async () => {
    const store = sqliteKeyStore({ path: join(dir, 'admit-swallowed.db') });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS work (w TEXT);', postgres: '' });
    await store.transaction((tx) =>
      tx.run("CREATE TRIGGER roll_back BEFORE INSERT ON work WHEN NEW.w = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'disk full'); END"),
    );
    const swallowed: string[] = [];
    const admitted = store.admit(admission('k-swallowed'), {
      phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, after: { recoveryPoint: 'EXT1_SENT' } },
      work: async (tx: Tx) => {
        try {
          await tx.run('INSERT INTO work (w) VALUES ($1)', ['boom']);
        } catch (error) {
          swallowed.push((error as Error).message);
        }
      },
    });
    await expect(admitted).rejects.toThrow();
    expect(swallowed).toEqual(['disk full']);
    // Neither the key at EXT1_SENT without its work, nor the work: a retry starts afresh.
    expect(await store.load('acme', 'k-swallowed')).toBeUndefined();
    expect(await store.transaction((tx) => tx.all('SELECT w FROM work'))).toEqual([]);
    expect((await store.admit(admission('k-swallowed'))).owned).toBe(true);
    await store.close();
  });

  it.each([
    ['ABORT', 'the statement'],
    ['ROLLBACK', 'the whole transaction'],
  ])('commits no phase when the write carrying its outcome mark fails (RAISE(%s): SQLite undoes %s), its work undone with it', async (raise) => {
    const path = join(dir, `mark-fails-${raise}.db`);
    const store = sqliteKeyStore({ path });
    await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS work (w TEXT);', postgres: '' });
    const admitted = await store.admit(admission('k-mark'));
    if (!admitted.owned) throw new Error('not owned');
    expect((await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 })).ok).toBe(true);
    // The phase's UPDATE, which carries the mark's data, fails after the work's statements ran, as a full disk would make it.
    await store.transaction((tx) =>
      tx.run(
        `CREATE TRIGGER refuse_mark BEFORE UPDATE ON oncely_keys WHEN json_extract(NEW.data, '$.charge') IS NOT NULL BEGIN SELECT RAISE(${raise}, 'no room'); END`,
      ),
    );
    const failed: string[] = [];
    const phase = store.write(
      admitted.lease,
      { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before: { recoveryPoint: 'EXT1_DONE', data: { charge: 'ch_1' } } },
      async (tx) => {
        for (const note of ['first', 'second']) {
          try {
            await tx.run('INSERT INTO work (w) VALUES ($1)', [note]);
          } catch (error) {
            failed.push(note);
          }
        }
      },
    );
    await expect(phase).rejects.toThrow('no room');
    expect(failed).toEqual([]);
    // Neither the phase nor its work: the row stays where it was (the runner then writes the mark alone).
    expect(await store.load('acme', 'k-mark')).toMatchObject({ recoveryPoint: 'EXT1_SENT', data: {} });
    expect(await store.transaction((tx) => tx.all('SELECT w FROM work'))).toEqual([]);
    await store.close();
  });
});

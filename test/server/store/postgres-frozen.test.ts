/**
 * A process frozen (SIGSTOP: as a blocked event loop or a stopped container) inside a whole
 * request on PostgreSQL, its transaction open and its key held, unseen, by its INSERT. Its
 * connection stays up, so nothing ends the transaction from its side: the lease must, as it does
 * for a started row in the plain mode. A duplicate on another instance, waiting in its own INSERT,
 * owns the key once the frozen transaction has been idle a lease, and runs the request. The same
 * holds for every transaction the store opens under a key: a first phase in the admission's
 * transaction, and a later phase's transaction holding the row's lock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import type { KeyStore } from '../../../src/server/store/types.js';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';
import { runWholeRequest } from '../../../src/server/store/request-transaction.js';

const CHILD = fileURLToPath(new URL('./postgres-frozen.child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LEASE_MS = 1500;
// PGlite lives in one process: a real server or none (true under ONCELY_REQUIRE_PG=1, so CI fails instead of skipping).
const withPostgres = await canRunServerTests();

/** The child, once its transaction's statements and note are in (it printed `admitted`). */
function admitted(url: string, schema: string, key: string, mode: 'whole' | 'first' | 'phase' = 'whole'): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, url, schema, key, String(LEASE_MS), mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  createInterface({ input: proc.stderr! }).on('line', (line) => stderr.push(line));
  return new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout! }).on('line', (line) => line === 'admitted' && resolve(proc));
    proc.once('exit', (code, signal) => reject(new Error(`the child exited (${signal ?? code}) before its admission: ${stderr.join('\n')}`)));
  });
}

describe.skipIf(!withPostgres)('a process frozen inside a transaction of the store, on PostgreSQL', () => {
  it('holds its key at most a lease after its last statement: a waiting duplicate then owns it and runs', { timeout: 60_000 }, async () => {
    await frozenIn('whole', async (store, notes) => {
      const stoppedAt = performance.now();
      // The duplicate waits in its INSERT far longer than the lease: without the bound it would
      // wait all of it, then be told the key is in flight (no row: the frozen INSERT is unseen).
      const duplicate = await runWholeRequest(
        store,
        { clientId: 'acme', key: 'whole', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: LEASE_MS, ttlMs: 86_400_000, waitMs: 10_000 },
        {
          work: (tx) => tx.run('INSERT INTO notes (note) VALUES ($1)', ['duplicate']),
          response: () => ({ status: 201, headers: {}, body: '{"by":"duplicate"}' }),
        },
      );
      const waited = performance.now() - stoppedAt;
      expect(duplicate).toMatchObject({ owned: true, row: { state: 'finished', response: { body: '{"by":"duplicate"}' } } });
      // Well before the duplicate's own wait ran out (the frozen process stopped after its note, so
      // its transaction had been idle a little longer than `waited` when PostgreSQL ended it).
      expect(waited).toBeLessThan(LEASE_MS + 5000);
      // The frozen process's note rolled back with its transaction: the request took effect once.
      expect(await notes()).toEqual([{ note: 'duplicate' }]);
      expect(await store.load('acme', 'whole')).toMatchObject({ state: 'finished', response: { body: '{"by":"duplicate"}' } });
    });
  });

  /** A store on a schema of its own with a notes table, a child frozen in `mode`, and clean-up. */
  async function frozenIn(mode: 'whole' | 'first' | 'phase', check: (store: KeyStore, notes: () => Promise<unknown[]>) => Promise<void>): Promise<void> {
    const url = await requireServerUrl(`frozen ${mode}`);
    const schema = `oncely_t_frozen_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    const store = postgresKeyStore({ connectionString: url, schema });
    let child: ChildProcess | undefined;
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (note text)' });
      child = await admitted(url, schema, mode, mode);
      child.kill('SIGSTOP');
      await check(store, async () => (await admin.query(`SELECT note FROM ${schema}.notes`)).rows);
    } finally {
      if (child) {
        child.kill('SIGKILL');
        child.kill('SIGCONT');
      }
      await store.close();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  }

  it(
    'a first phase in the admission: a duplicate waiting in its INSERT owns the key after a lease (not a 503 at the statement timeout)',
    { timeout: 60_000 },
    async () => {
      await frozenIn('first', async (store, notes) => {
        const stoppedAt = performance.now();
        // A plain admission waits in its INSERT for the frozen one's (no wait bound): without the idle
        // bound until the statement timeout (15 s), which fails it.
        const duplicate = await store.admit({
          clientId: 'acme',
          key: 'first',
          requestHash: 'h',
          endpoint: 'POST /x',
          requestBody: '{}',
          leaseMs: LEASE_MS,
          ttlMs: 86_400_000,
        });
        expect(duplicate.owned).toBe(true);
        expect(performance.now() - stoppedAt).toBeLessThan(LEASE_MS + 5000);
        expect(await notes()).toEqual([]);
      });
    },
  );

  it('a later phase holding the row: a takeover after the lease is not kept waiting by it', { timeout: 60_000 }, async () => {
    await frozenIn('phase', async (store, notes) => {
      const stoppedAt = performance.now();
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));
      // The row's lease has run out; its lock is the frozen phase's: without the idle bound the
      // takeover's UPDATE waits for it until the statement timeout (15 s), and fails.
      const lease = await store.takeOver('acme', 'phase', LEASE_MS);
      expect(lease).not.toBeNull();
      expect(performance.now() - stoppedAt).toBeLessThan(LEASE_MS + 5000);
      // The frozen phase's note rolled back, and its point was never written.
      expect(await notes()).toEqual([]);
      expect(await store.load('acme', 'phase')).toMatchObject({ state: 'started', recoveryPoint: null });
    });
  });
  it('never loosens a shorter idle bound the sessions of the pool already have', async () => {
    const url = await requireServerUrl('idle bound kept');
    const schema = `oncely_t_idle_${randomBytes(4).toString('hex')}`;
    // An operator's pool: its sessions end a transaction idle for 2 s.
    const strict = new pg.Pool({ connectionString: url, max: 2 });
    strict.on('connect', (client) => void client.query("SET idle_in_transaction_session_timeout = '2s'"));
    const plain = new pg.Pool({ connectionString: url, max: 2 });
    const inside = async (pool: pg.Pool, key: string, leaseMs: number): Promise<unknown> => {
      const store = postgresKeyStore({ pool, schema });
      await store.migrate();
      const admitted = await runWholeRequest(
        store,
        { clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs, ttlMs: 86_400_000 },
        {
          work: (tx) => tx.get<{ idle_in_transaction_session_timeout: string }>('SHOW idle_in_transaction_session_timeout'),
          response: (row) => ({ status: 200, headers: {}, body: JSON.stringify(row) }),
        },
      );
      return admitted.owned && admitted.row ? JSON.parse(admitted.row.response!.body) : undefined;
    };
    try {
      expect(await inside(strict, 'strict-long-lease', 30_000)).toEqual({ idle_in_transaction_session_timeout: '2s' });
      expect(await inside(strict, 'strict-short-lease', 1_000)).toEqual({ idle_in_transaction_session_timeout: '1s' });
      expect(await inside(plain, 'plain', 30_000)).toEqual({ idle_in_transaction_session_timeout: '30s' });
    } finally {
      await plain.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await Promise.all([strict.end(), plain.end()]);
    }
  });
});

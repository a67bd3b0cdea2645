/**
 * The PostgreSQL store never reports success for a commit no synchronous standby confirmed. A
 * private primary waits for a standby that never comes; the test abandons the wait as an operator
 * (`pg_cancel_backend`) or a failing primary (`pg_terminate_backend`) would, and the store call
 * must throw {@link CommitUnconfirmedError} — not resolve, and not read the row back from this
 * primary and call the commit landed. The store's own client timeout, the one bound on a COMMIT
 * (`statement_timeout` does not apply to it), fails the call and leaves the commit invisible.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import type { AdmitInput, Lease } from '../../../src/server/store/types.js';
import { CommitUnconfirmedError } from '../../../src/server/store/unconfirmed-commit.js';
import { canRunPrivateClusterTests } from '../../support/pg.js';
import { startSyncPrimary, type Abandon, type SyncPrimary } from '../../support/sync-standby.js';

/** A built-in store: every optional member of the contract present. */
type PgStore = ReturnType<typeof postgresKeyStore>;

// Without initdb the test cannot make a primary of its own; CI (ONCELY_REQUIRE_PG=1) must fail then.
const runnable = canRunPrivateClusterTests();
if (!runnable) console.warn('[pg harness] SKIPPING the unconfirmed-commit store test: no initdb installed');

const schema = 'oncely_unconfirmed_store';
const input = (key: string): AdmitInput => ({
  clientId: 'acme',
  key,
  requestHash: 'a'.repeat(64),
  endpoint: 'POST /v1/payments',
  requestBody: '{"amount":1}',
  leaseMs: 10_000,
  ttlMs: 86_400_000,
});
const response = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}' };

describe.skipIf(!runnable)('a commit whose wait for the synchronous standby is abandoned', () => {
  let primary: SyncPrimary;
  let appPool: pg.Pool;
  const stores: PgStore[] = [];
  beforeAll(async () => {
    primary = await startSyncPrimary();
    appPool = new pg.Pool({ connectionString: primary.url, max: 4 });
    await postgresKeyStore({ connectionString: primary.url, schema }).migrate();
  });
  afterEach(() => primary.waitForStandby(false));
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await appPool?.end();
    await primary?.destroy();
  });

  const open = (pool: 'own' | 'app', options: { statementTimeoutMs?: number; connectTimeoutMs?: number } = {}): PgStore => {
    const store = pool === 'own' ? postgresKeyStore({ connectionString: primary.url, schema, ...options }) : postgresKeyStore({ pool: appPool, schema });
    stores.push(store);
    return store;
  };
  const state = async (key: string) => (await primary.query(`SELECT state FROM ${schema}.oncely_keys WHERE key = $1`, [key]))[0]?.state;
  /** A key admitted (commits not waiting yet), then every commit made to wait. */
  const admitted = async (store: PgStore, key: string): Promise<Lease> => {
    const result = await store.admit(input(key));
    if (!result.owned) throw new Error('not admitted');
    await primary.waitForStandby(true);
    return result.lease;
  };

  describe.each(['own', 'app'] as const)('on the %s pool', (pool) => {
    it.each(['cancel', 'terminate'] as Abandon[])('throws CommitUnconfirmedError from finish, with work, when the wait is abandoned (%s)', async (how) => {
      const store = open(pool);
      const key = `finish-work-${pool}-${how}`;
      const lease = await admitted(store, key);
      const finishing = store.write(lease, { kind: 'finish', response }, (tx) => tx.get('SELECT 1 AS one'));
      expect(await primary.abandonWaits(how, finishing)).toBeGreaterThanOrEqual(1);
      await expect(finishing).rejects.toBeInstanceOf(CommitUnconfirmedError);
      // Committed on this primary alone: what a failover to the standby loses.
      expect(await state(key)).toBe('finished');
    });

    it.each(['cancel', 'terminate'] as Abandon[])('throws CommitUnconfirmedError from finish alone (no work) when the wait is abandoned (%s)', async (how) => {
      const store = open(pool);
      const key = `finish-alone-${pool}-${how}`;
      const lease = await admitted(store, key);
      const finishing = store.write(lease, { kind: 'finish', response });
      expect(await primary.abandonWaits(how, finishing)).toBeGreaterThanOrEqual(1);
      await expect(finishing).rejects.toBeInstanceOf(CommitUnconfirmedError);
    });

    it('throws CommitUnconfirmedError from a whole request’s commit (beginRequest) when the wait is cancelled', async () => {
      const store = open(pool);
      await primary.waitForStandby(true);
      const began = await store.beginRequest(input(`whole-${pool}`));
      if (!began.owned) throw new Error('not owned');
      const committing = began.request.commit(response);
      expect(await primary.abandonWaits('cancel', committing)).toBeGreaterThanOrEqual(1);
      await expect(committing).rejects.toBeInstanceOf(CommitUnconfirmedError);
    });
  });

  it('bounds a COMMIT waiting for the standby by the client timeout, not statement_timeout, and leaves it invisible until confirmed', async () => {
    // query_timeout = statementTimeoutMs + connectTimeoutMs = 1.2 s; statement_timeout = 200 ms.
    const store = open('own', { statementTimeoutMs: 200, connectTimeoutMs: 1000 });
    const key = 'client-timeout';
    const lease = await admitted(store, key);
    const started = Date.now();
    await expect(store.write(lease, { kind: 'finish', response })).rejects.toThrow(/timeout/i);
    // statement_timeout would have cancelled the wait at 200 ms and made the commit visible here.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(await state(key)).toBe('started');
    // The transaction still waits on the server; once a standby confirms (here: none is needed any
    // more), it commits: the row is finished and a retry replays it.
    await primary.waitForStandby(false);
    expect(await state(key)).toBe('finished');
  });
});

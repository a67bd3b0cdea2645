import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import { openPgBackend, resolvePgUrl } from '../../support/pg.js';
import { postgresStoreSuite } from './postgres-suite.js';

postgresStoreSuite('postgresKeyStore on PostgreSQL (PGlite only when no server is reachable)', () => openPgBackend('store'));

const url = await resolvePgUrl();
if (!url) console.warn('[pg harness] SKIPPING the injected-pool test: it needs a PostgreSQL server');

describe.skipIf(!url)('postgresKeyStore over a pool the caller owns', () => {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  const schema = `oncely_t_pool_${process.pid}`;
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it('keeps the app tables in its schema and leaves the pool open on close', async () => {
    const store = postgresKeyStore({ pool, schema });
    await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS pool_probe (n int)' });
    await store.transaction((tx) => tx.run('INSERT INTO pool_probe (n) VALUES ($1)', [7]));
    const admitted = await store.admit({
      clientId: 'acme', key: 'k', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 1000, ttlMs: 60_000,
    });
    expect(admitted.owned).toBe(true);
    await store.close();
    const rows = await pool.query<{ n: number }>(`SELECT n FROM ${schema}.pool_probe`);
    expect(rows.rows).toEqual([{ n: 7 }]);
  });

  it('takes its schema from a URL whose options set search_path, and keeps the URL\'s other settings', async () => {
    const urlSchema = `${schema}_url`;
    const withOptions = `${url}?options=${encodeURIComponent(`-c search_path=${urlSchema} -c synchronous_commit=off`)}`;
    const store = postgresKeyStore({ connectionString: withOptions });
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS url_probe (n int)' });
      const settings = await store.transaction((tx) =>
        tx.get<{ sc: string; sp: string }>(`SELECT current_setting('synchronous_commit') AS sc, current_setting('search_path') AS sp`),
      );
      expect(settings?.sc).toBe('off');
      expect(settings?.sp.startsWith(urlSchema)).toBe(true);
      const tables = await pool.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [urlSchema]);
      expect(tables.rows.map((r) => r.tablename)).toContain('url_probe');
      expect(tables.rows.map((r) => r.tablename)).toContain('oncely_schema_version');
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${urlSchema} CASCADE`);
    }
  });
});

/**
 * A multi-host PostgreSQL URL (`postgres://u@db1,db2/payments`): parsed into its hosts (which the
 * pure-JS `pg` cannot do), handed to `pg` one host at a time, and a store over it that finds the
 * host that answers. Moving to a promoted standby is held by `postgres-failover.test.ts`.
 */
import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, hostList, listenConfig } from '../../../src/server/store/postgres-hosts.node.js';
import { hostsFromUrl, schemaFromUrl, urlForHost, urlOptions, withoutOptions } from '../../../src/server/store/postgres-url.node.js';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';

describe('a multi-host connection string', () => {
  const url = 'postgres://oncely:s3cret@db1:5433,db2,[::1]:6000/payments?options=-c%20search_path%3Dshop_a&sslmode=disable';

  it('lists its hosts in order, with 5432 where no port is given', () => {
    expect(hostsFromUrl(url)).toEqual([
      { host: 'db1', port: 5433 },
      { host: 'db2', port: 5432 },
      { host: '::1', port: 6000 },
    ]);
    expect(hostsFromUrl('postgres://u@db.internal/payments')).toEqual([{ host: 'db.internal', port: 5432 }]);
    expect(hostsFromUrl('/var/lib/oncely.db')).toEqual([]);
  });

  it('refuses a host entry with a port that is not a number, naming it', () => {
    expect(() => hostsFromUrl('postgres://u@db1:54x2,db2/p')).toThrow(/invalid host "db1:54x2"/);
  });

  it('becomes a one-host URL pg can parse, keeping user, password, database and parameters', () => {
    expect(urlForHost(url, { host: 'db2', port: 5432 })).toBe('postgres://oncely:s3cret@db2:5432/payments?options=-c%20search_path%3Dshop_a&sslmode=disable');
    expect(urlForHost(url, { host: '::1', port: 6000 })).toMatch(/^postgres:\/\/oncely:s3cret@\[::1\]:6000\/payments\?/);
  });

  it('still gives its options and schema, and loses only its options when they are taken out', () => {
    expect(urlOptions(url)).toBe('-c search_path=shop_a');
    expect(schemaFromUrl(url)).toBe('shop_a');
    expect(withoutOptions(url)).toBe('postgres://oncely:s3cret@db1:5433,db2,[::1]:6000/payments?sslmode=disable');
  });

  it('shares one list per set of hosts, which moves on only when its current host fails', () => {
    const list = hostList('postgres://u@h-a:1,h-b:2/x')!;
    expect(hostList('postgres://other@h-a:1,h-b:2/y')).toBe(list);
    expect(hostList('postgres://u@h-a:1/x')).toBeUndefined();
    list.failed({ host: 'h-b', port: 2 });
    expect(list.current()).toEqual({ host: 'h-a', port: 1 });
    list.failed({ host: 'h-a', port: 1 });
    list.failed({ host: 'h-a', port: 1 });
    expect(list.current()).toEqual({ host: 'h-b', port: 2 });
  });

  it('gives a LISTEN connection the URL of the current host each time one is made', () => {
    const config = listenConfig({ connectionString: 'postgres://u@h-c:1,h-d:2/x', keepAlive: true });
    expect({ ...config }).toEqual({ connectionString: 'postgres://u@h-c:1/x', keepAlive: true });
    hostList('postgres://u@h-c:1,h-d:2/x')!.failed({ host: 'h-c', port: 1 });
    expect({ ...config }.connectionString).toBe('postgres://u@h-d:2/x');
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.skipIf(!(await canRunServerTests()))('a multi-host URL whose first host is down', () => {
  let url: string;
  const schema = `oncely_t_hosts_${process.pid}`;
  beforeAll(async () => {
    const server = new URL(await requireServerUrl('postgres-hosts'));
    url = `postgres://${server.username}@127.0.0.1:${await closedPort()},${server.hostname}:${server.port || 5432}${server.pathname}`;
  });
  afterAll(async () => {
    const pool = createPool(pg, { connectionString: url });
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it('connects to the next host that is a primary, and stays there', async () => {
    const pool = createPool(pg, { connectionString: url, max: 2 });
    try {
      const answers = await Promise.all([1, 2, 3].map(() => pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')));
      expect(answers.map((answer) => answer.rows[0]?.standby)).toEqual([false, false, false]);
      expect(hostList(url)!.current()).toEqual(hostList(url)!.hosts[1]);
    } finally {
      await pool.end();
    }
  });

  it('runs a store over it: migrate, admit and load', async () => {
    const store = postgresKeyStore({ connectionString: url, schema });
    try {
      await store.migrate();
      const admitted = await store.admit({
        clientId: 'acme',
        key: 'k1',
        requestHash: 'h',
        endpoint: 'POST /v1/payments',
        requestBody: '{}',
        leaseMs: 10_000,
        ttlMs: 60_000,
      });
      expect(admitted.owned).toBe(true);
      expect((await store.load('acme', 'k1'))?.state).toBe('started');
    } finally {
      await store.close();
    }
  });
});

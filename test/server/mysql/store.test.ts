/**
 * What `mysqlKeyStore` promises beyond the shared contract suites: it is written from the public
 * `oncely/server/store` entry alone; keys are byte-exact (case, trailing spaces); a key wider
 * than its column is refused, never cut; and an admission's bounded wait is put back before the
 * app's statements run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdmitInput, KeyStore, Tx } from '../../../src/server/store.js';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../../support/mysql.js';

const src = fileURLToPath(new URL('../../../src/server/', import.meta.url));
const files = ['mysql.ts', ...readdirSync(`${src}mysql`).map((name) => `mysql/${name}`)];

describe('the MySQL store’s sources', () => {
  it('import nothing of oncely but the public oncely/server/store entry (and each other)', () => {
    const imports = files.flatMap((file) =>
      [...readFileSync(`${src}${file}`, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'([^']+)'/g)].map((match) => ({ file, from: match[1]! })),
    );
    expect(imports.length).toBeGreaterThan(files.length);
    const allowed = (file: string, from: string): boolean =>
      from.startsWith('node:') ||
      from === 'mysql2/promise' ||
      (file === 'mysql.ts' ? from.startsWith('./mysql/') : from === '../store.js' || /^\.\/[a-z.-]+\.js$/.test(from));
    expect(imports.filter(({ file, from }) => !allowed(file, from))).toEqual([]);
    expect(imports.some(({ from }) => from === '../store.js')).toBe(true);
  });
});

const run = await canRunMysqlTests();
let backend: MysqlBackend;
let store: KeyStore;
let url: string;
beforeAll(async () => {
  if (!run) return;
  backend = await openMysqlBackend('store');
  url = await backend.newDatabase();
  store = backend.open(url);
  await store.migrate?.();
});
afterAll(async () => backend?.close());

const input = (key: string, over: Partial<AdmitInput> = {}): AdmitInput => ({
  clientId: 'acme',
  key,
  requestHash: 'a'.repeat(64),
  endpoint: 'POST /v1/orders',
  requestBody: '{}',
  leaseMs: 10_000,
  ttlMs: 60_000,
  ...over,
});

describe.runIf(run)('mysqlKeyStore on a server', () => {
  it('keeps keys byte-exact: case, a trailing space and a look-alike character are keys of their own', async () => {
    const keys = ['order-1', 'Order-1', 'order-1 ', 'order-1\u00a0', 'ordér-1', 'orde\u0301r-1'];
    const admitted = await Promise.all(keys.map((key) => store.admit(input(key))));
    expect(admitted.map((result) => result.owned)).toEqual(keys.map(() => true));
    for (const key of keys) expect((await store.load('acme', key))?.key).toBe(key);
    const rows = await backend.query<{ n: number }>(url, "SELECT COUNT(*) AS n FROM oncely_keys WHERE client_id = 'acme'");
    expect(Number(rows[0]!.n)).toBe(keys.length);
  });

  it('refuses a key wider than its column instead of cutting it, and stores nothing', async () => {
    const wide = `w${'é'.repeat(400)}`; // 801 UTF-8 bytes
    await expect(store.admit(input(wide))).rejects.toThrow(/at most 768 UTF-8 bytes/);
    const rows = await backend.query<{ n: number }>(url, "SELECT COUNT(*) AS n FROM oncely_keys WHERE client_id = 'acme' AND idem_key LIKE 'w%'");
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('measures the lease by the database’s clock', async () => {
    const admitted = await store.admit(input('clock', { leaseMs: 5_000 }));
    expect(admitted.owned).toBe(true);
    const row = await store.load('acme', 'clock');
    expect(row?.leaseRemainingMs).toBeGreaterThan(4_000);
    expect(row?.leaseRemainingMs).toBeLessThanOrEqual(5_000);
    const [clock] = await backend.query<{ db: number }>(url, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) DIV 1000 AS db");
    expect(Math.abs(Number(clock!.db) - row!.createdAt)).toBeLessThan(5_000);
  });

  it('gives the work of a bounded admission the server’s own lock wait, not the admission’s bound', async () => {
    const seen: unknown[] = [];
    await store.admit(input('bounded', { waitMs: 1_000 }), {
      work: async (tx: Tx) => {
        seen.push((await tx.get<{ wait: unknown }>('SELECT @@innodb_lock_wait_timeout AS wait'))?.wait);
        return 1;
      },
      response: () => ({ status: 201, headers: {}, body: '' }),
    });
    const [server] = await backend.query<{ wait: unknown }>(url, 'SELECT @@GLOBAL.innodb_lock_wait_timeout AS wait');
    expect(seen.map(Number)).toEqual([Number(server!.wait)]);
  });
});

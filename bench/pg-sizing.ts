/**
 * How big the key table gets: rows, bytes per key, table and index sizes at 1 M and 10 M finished
 * keys, measured on a real PostgreSQL in a scratch schema (dropped at the end).
 *
 * The row is the store's own, made by the product: `oncely serve` on that schema takes one real
 * payment (`POST /v1/payments`), and its finished `oncely_keys` row is the template. Copies differ
 * where real keys differ — key (a UUIDv7's 36 characters), request hash, timestamps (one a
 * millisecond apart, so the BRIN expiry index sees time-ordered inserts as it does in production).
 *
 * Usage: `npx tsx bench/pg-sizing.ts [--url postgres://postgres@127.0.0.1:5432/test] [--steps 1000000,10000000]`
 * Writes `bench/results/pg-sizing.json`.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ROOT, TSX, startServer } from './lib/proc.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.ONCELY_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
    steps: { type: 'string', default: '1000000,10000000' },
  },
});
const schema = `oncely_sizing_${process.pid}`;
const BATCH = 500_000;

/** Sizes of the key table at one row count. */
interface Sizing {
  readonly rows: number;
  readonly heapBytes: number;
  /** Heap + TOAST + free space and visibility maps. */
  readonly tableBytes: number;
  readonly indexBytes: Record<string, number>;
  readonly totalBytes: number;
  readonly bytesPerKey: number;
  readonly avgRowWidth: number;
}

const server = await startServer([...TSX, join(ROOT, 'src/cli/main.ts'), 'serve', '--port', '0', '--db', values.url, '--pg-schema', schema, '--quiet']);
const reply = await fetch(`${server.url}/v1/payments`, {
  method: 'POST',
  headers: { authorization: 'Bearer test_acme', 'idempotency-key': '01932c2e-8a5b-7cc4-9b1e-6f0d2a7b4c11', 'content-type': 'application/json' },
  body: JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'invoice-2026-000123' }),
});
if (reply.status !== 201) throw new Error(`the template payment answered ${reply.status}: ${await reply.text()}`);
await server.stop();

const db = new pg.Client({ connectionString: values.url });
await db.connect();
const t = `${schema}.oncely_keys`;
const results: Sizing[] = [];
try {
  const template = (await db.query(`SELECT * FROM ${t}`)).rows;
  if (template.length !== 1 || template[0].state !== 'finished') throw new Error(`expected one finished template row, found ${JSON.stringify(template)}`);
  console.error(`[sizing] template row: ${JSON.stringify(template[0]).length} characters as JSON`);
  let rows = 1;
  for (const target of values.steps.split(',').map(Number)) {
    const started = performance.now();
    while (rows < target) {
      const n = Math.min(BATCH, target - rows);
      // A UUIDv7-shaped key from the row number: 36 characters, distinct, roughly time-ordered.
      await db.query(
        `INSERT INTO ${t} SELECT k.client_id,
           lpad(to_hex(g), 8, '0') || '-' || substr(md5(g::text), 1, 4) || '-7' || substr(md5(g::text), 5, 3) || '-8' || substr(md5(g::text), 8, 3) || '-' || substr(md5(g::text), 11, 12),
           encode(sha256(g::text::bytea), 'hex'), k.endpoint, k.request_body, k.state, k.recovery_point, k.data, k.response_status,
           k.response_headers, k.response_body, NULL, NULL, false, k.next_attempt_at, k.attempts,
           k.created_at + g * interval '1 millisecond', k.expires_at + g * interval '1 millisecond'
         FROM ${t} k, generate_series($1::bigint, $2::bigint) g WHERE k.key = '01932c2e-8a5b-7cc4-9b1e-6f0d2a7b4c11'`,
        [rows, rows + n - 1],
      );
      rows += n;
    }
    await db.query(`VACUUM ANALYZE ${t}`);
    const size = async (sql: string, params: unknown[] = []): Promise<number> => Number((await db.query<{ n: string }>(sql, params)).rows[0]!.n);
    const indexes = (
      await db.query<{ name: string; bytes: string }>(
        `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS bytes FROM pg_index WHERE indrelid = $1::regclass`,
        [t],
      )
    ).rows;
    const tableBytes = await size('SELECT pg_table_size($1::regclass) AS n', [t]);
    const totalBytes = await size('SELECT pg_total_relation_size($1::regclass) AS n', [t]);
    const sizing: Sizing = {
      rows: await size(`SELECT count(*) AS n FROM ${t}`),
      heapBytes: await size('SELECT pg_relation_size($1::regclass) AS n', [t]),
      tableBytes,
      indexBytes: Object.fromEntries(indexes.map((index) => [index.name.replace(`${schema}.`, ''), Number(index.bytes)])),
      totalBytes,
      bytesPerKey: Math.round(totalBytes / rows),
      avgRowWidth: await size(`SELECT sum(avg_width) AS n FROM pg_stats WHERE schemaname = $1 AND tablename = 'oncely_keys'`, [schema]),
    };
    results.push(sizing);
    console.error(`[sizing] ${rows} rows in ${Math.round((performance.now() - started) / 1000)} s: ${JSON.stringify(sizing)}`);
  }
} finally {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
console.log('| keys | heap | table (+TOAST) | primary key | unfinished (partial) | expiry (BRIN) | total | bytes per key |');
console.log('|---|---|---|---|---|---|---|---|');
for (const s of results) {
  const index = (name: string): string => mb(s.indexBytes[name] ?? 0);
  console.log(
    `| ${s.rows.toLocaleString('en')} | ${mb(s.heapBytes)} | ${mb(s.tableBytes)} | ${index('oncely_keys_pkey')} | ${index('oncely_keys_unfinished')} | ${index('oncely_keys_expiry')} | ${mb(s.totalBytes)} | ${s.bytesPerKey} |`,
  );
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/pg-sizing.json'), `${JSON.stringify({ at: new Date().toISOString(), postgres: 15, results }, null, 2)}\n`);

/**
 * What the surviving primary holds for each operation's key, read at the end of a trial: the
 * key's record in `oncely_keys` (state, stored status, a digest of the stored body), and its
 * effects — payment rows and ledger entries — in the app's own tables (`payments` +
 * `ledger_entries` for `oncely serve`, `payments` + `ledger` for the Express app).
 *
 * @module
 */
import pg from 'pg';
import { EXPRESS_SCHEMA, SERVE_SCHEMA } from './apps.js';
import type { Operation, ServerRecord } from './history-check.js';
import { digestOf } from './workload.js';

/** Per app: its schema and the SQL counting a key's payment rows and ledger entries. */
const APPS = {
  serve: {
    schema: SERVE_SCHEMA,
    effects: (s: string) => `(SELECT count(*)::int FROM ${s}.payments p WHERE p.idempotency_key = k.key)`,
    ledger: (s: string) => `(SELECT count(*)::int FROM ${s}.ledger_entries l WHERE l.idempotency_key = k.key)`,
  },
  express: {
    schema: EXPRESS_SCHEMA,
    effects: (s: string) => `(SELECT count(*)::int FROM ${s}.payments p WHERE p.key = k.key)`,
    ledger: (s: string) => `(SELECT count(*)::int FROM ${s}.ledger l WHERE l.key = k.key)`,
  },
} as const;

interface Row {
  key: string;
  state: 'started' | 'finished' | null;
  response_status: number | null;
  response_body: string | null;
  effects: number;
  ledger: number;
}

/**
 * Reads every operation's key on the primary at `url`.
 *
 * @example
 * ```ts
 * const server = await readServerState(leader.url, workload.operations);
 * ```
 */
export async function readServerState(url: string, operations: readonly Operation[]): Promise<ServerRecord[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const records: ServerRecord[] = [];
    for (const [app, sql] of Object.entries(APPS)) {
      const keys = operations.filter((op) => op.app === app).map((op) => op.key);
      if (keys.length === 0) continue;
      const s = sql.schema;
      const { rows } = await client.query<Row>(
        `SELECT k.key, o.state, o.response_status, o.response_body, ${sql.effects(s)} AS effects, ${sql.ledger(s)} AS ledger
           FROM unnest($1::text[]) AS k(key) LEFT JOIN ${s}.oncely_keys o ON o.key = k.key`,
        [keys],
      );
      for (const row of rows) {
        records.push({
          key: row.key,
          record: row.state ?? 'absent',
          ...(row.response_status === null ? {} : { status: row.response_status }),
          ...(row.response_body === null ? {} : { digest: digestOf(row.response_body) }),
          effects: row.effects,
          ledger: row.ledger,
        });
      }
    }
    return records;
  } finally {
    await client.end();
  }
}

/** How many keys of the apps' schemas are still `started` (a recovery worker has yet to finish them). */
export async function countStarted(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    let total = 0;
    for (const { schema } of Object.values(APPS)) {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.oncely_keys WHERE state = 'started'`);
      total += rows[0]!.n;
    }
    return total;
  } finally {
    await client.end();
  }
}

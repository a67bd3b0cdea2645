/**
 * The PostgreSQL the peer benchmarks use (`ONCELY_PG_URL`, else the local server) and the
 * clean-up of a peer's schema once its scenario or suite is done.
 *
 * @module
 */
import pg from 'pg';

/** The benchmarks' PostgreSQL: `ONCELY_PG_URL`, else the local trust-auth server. */
export const PG_URL = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name the benchmarks create: lower-case letters, digits and `_`, so it can be quoted safely. */
const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Drops a benchmark schema and everything in it (the key table, the charges).
 *
 * @example
 * ```ts
 * await dropPgSchema('bench_1a2b3c4d');
 * ```
 */
export async function dropPgSchema(schema: string, url = PG_URL): Promise<void> {
  if (!SCHEMA.test(schema)) throw new Error(`dropPgSchema: "${schema}" is not a benchmark schema name (lower-case letters, digits, _)`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

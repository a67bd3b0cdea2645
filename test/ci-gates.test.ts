/**
 * CI cannot pass by skipping: the PostgreSQL, PgBouncer, MySQL and server-process suites skip only
 * when their gate says so, and under `ONCELY_REQUIRE_PG=1` and `ONCELY_REQUIRE_MYSQL=1` (set by
 * `.ci/run`, with `CI=true`) every gate says "run" — a missing server or binary then fails the
 * suite that needs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { canRunMysqlTests } from './support/mysql.js';
import { canRunPrivateClusterTests, canRunServerTests } from './support/pg.js';
import { canRunPgBouncerTests } from './support/pgbouncer.js';

const saved = process.env.ONCELY_REQUIRE_PG;
const savedMysql = process.env.ONCELY_REQUIRE_MYSQL;
afterEach(() => {
  if (saved === undefined) delete process.env.ONCELY_REQUIRE_PG;
  else process.env.ONCELY_REQUIRE_PG = saved;
  if (savedMysql === undefined) delete process.env.ONCELY_REQUIRE_MYSQL;
  else process.env.ONCELY_REQUIRE_MYSQL = savedMysql;
});

describe('the skip gates of the server suites', () => {
  it('never skip under ONCELY_REQUIRE_PG=1', async () => {
    process.env.ONCELY_REQUIRE_PG = '1';
    expect(await canRunServerTests()).toBe(true);
    expect(await canRunPgBouncerTests()).toBe(true);
    expect(canRunPrivateClusterTests()).toBe(true);
  });

  it('never skip the MySQL suites under ONCELY_REQUIRE_MYSQL=1, with or without a server', async () => {
    process.env.ONCELY_REQUIRE_MYSQL = '1';
    expect(await canRunMysqlTests()).toBe(true);
  });

  it.runIf(process.env.CI === 'true')('are required in CI: .ci/run sets ONCELY_REQUIRE_PG=1', () => {
    expect(saved).toBe('1');
  });

  it.runIf(process.env.CI === 'true')('are required in CI: .ci/run sets ONCELY_REQUIRE_MYSQL=1 and ONCELY_MYSQL_URL', () => {
    expect({ required: savedMysql, url: process.env.ONCELY_MYSQL_URL }).toEqual({ required: '1', url: expect.stringMatching(/^mysql:\/\//) });
  });
});

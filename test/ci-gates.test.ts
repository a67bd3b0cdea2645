/**
 * CI cannot pass by skipping: the PostgreSQL, PgBouncer and server-process suites skip only when
 * their gate says so, and under `ONCELY_REQUIRE_PG=1` (set by `.ci/run`, with `CI=true`) every
 * gate says "run" — a missing server or binary then fails the suite that needs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { canRunServerTests } from './support/pg.js';
import { canRunPgBouncerTests } from './support/pgbouncer.js';

const saved = process.env.ONCELY_REQUIRE_PG;
afterEach(() => {
  if (saved === undefined) delete process.env.ONCELY_REQUIRE_PG;
  else process.env.ONCELY_REQUIRE_PG = saved;
});

describe('the skip gates of the server suites', () => {
  it('never skip under ONCELY_REQUIRE_PG=1', async () => {
    process.env.ONCELY_REQUIRE_PG = '1';
    expect(await canRunServerTests()).toBe(true);
    expect(await canRunPgBouncerTests()).toBe(true);
  });

  it.runIf(process.env.CI === 'true')('are required in CI: .ci/run sets ONCELY_REQUIRE_PG=1', () => {
    expect(saved).toBe('1');
  });
});

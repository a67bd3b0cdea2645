/**
 * `oncely conform` against oncely's Express, Hono and Fastify middleware over a SQLite key store:
 * every check passes, the transient one through the app's own 503 (`--fault-header`) and the
 * in-flight one through a slow body.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { startOrderApp, type Framework } from './helpers/conform-apps.js';
import { conformReport } from './helpers/conform-run.js';

let dir: string;
let store: KeyStore;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-conform-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.();
});
afterAll(async () => {
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely conform against the framework middleware', () => {
  it.each(['express', 'hono', 'fastify'] as const satisfies readonly Framework[])(
    'passes every check against oncely/%s',
    async (framework) => {
      const app = await startOrderApp(framework, store);
      try {
        const { code, report } = await conformReport([
          app.url,
          '--body',
          '{"item":"book","quantity":2,"note":"{{unique}}"}',
          '--slow-body',
          '{"item":"book","slow":true,"note":"{{unique}}"}',
          '--header',
          'x-user: alice',
          '--header-b',
          'x-user: bob',
          '--fault-header',
          'x-fault: 1',
        ]);
        expect(report.checks.filter((c) => c.verdict !== 'pass').map((c) => `${c.id}: ${c.verdict} ${c.observed}`)).toEqual([]);
        expect(code).toBe(0);
        expect(report.checks.find((c) => c.id === 'transient')).toMatchObject({ requests: 2, created: 1 });
      } finally {
        await app.close();
      }
    },
    60_000,
  );
});

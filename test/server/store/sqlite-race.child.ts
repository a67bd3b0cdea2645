/**
 * Child process of sqlite-processes.test.ts: at a shared start time, admits keys a0…a{n-1} and
 * takes over keys t0…t{n-1} on one SQLite file, then prints which it won as JSON.
 */
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';

const [path = '', startAt = '0', count = '50'] = process.argv.slice(2);
const store = sqliteKeyStore({ path, busyTimeoutMs: 10_000 });
const n = Number(count);
const keys = (prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
const [admitted, tookOver] = await Promise.all([
  Promise.all(
    keys('a').map(async (key) => {
      const result = await store.admit({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 60_000, ttlMs: 60_000 });
      return result.owned ? key : null;
    }),
  ),
  Promise.all(keys('t').map(async (key) => ((await store.takeOver('acme', key, 60_000)) ? key : null))),
]);
process.stdout.write(JSON.stringify({ admitted: admitted.filter(Boolean), tookOver: tookOver.filter(Boolean) }));
await store.close();

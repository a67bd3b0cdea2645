/**
 * Child process of handler-processes.test.ts: opens the shared SQLite file, and at a shared
 * start time fires `count` identical keyed POSTs at its own handler; prints the answers as JSON.
 */
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { createTestApp } from './fixtures.js';

const [path = '', startAt = '0', count = '50'] = process.argv.slice(2);
const app = await createTestApp({ store: sqliteKeyStore({ path, busyTimeoutMs: 10_000 }), leaseMs: 10_000 });
await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
const responses = await Promise.all(Array.from({ length: Number(count) }, () => app.post({ amount: 77 }, { key: 'shared-key' })));
const answers = await Promise.all(
  responses.map(async (r) => ({
    status: r.status,
    replay: r.headers.get('idempotency-replay'),
    retryAfter: r.headers.get('retry-after'),
    body: await r.text(),
  })),
);
process.stdout.write(JSON.stringify({ answers, railCalls: app.rail.calls }));
await app.store.close?.();

/**
 * A caller with the default retry options against a real `oncely serve` that dies holding the
 * key and comes back while its lease on that key is still running: the call itself completes the
 * payment, once, instead of giving up with OPERATION_PENDING.
 */
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { memoryJournal } from '../../src/journal/memory.js';
import { createClient } from '../../src/node.js';
import { dbCount, spawnServe, tempDir, type Served } from '../reference/serve-process.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/** A port nothing listens on now, so the restarted server can take the one the caller knows. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('the default retry budget', () => {
  it('outlasts a server that crashed holding the key and restarted 10 s later with its 30 s lease still running', async () => {
    const db = `${dir}/restart.db`;
    const port = await freePort();
    // 30 s is the middleware's default lease, the longest of oncely's defaults. No recovery
    // worker: only the caller's own retry can finish the payment.
    const common = ['--db', db, '--port', String(port), '--lease', '30s', '--recovery-interval', '0'];
    const doomed = await spawnServe([...common, '--faults', 'crash-after:EXT1_SENT:1']);
    let restarted: Served | undefined;
    try {
      const client = createClient({ baseUrl: doomed.url, journal: memoryJournal(), headers: { authorization: 'Bearer test_acme' } });
      const paid = client.post<{ id: string }>('v1/payments', { json: { amount: 4200, currency: 'EUR', reference: 'restart-1' } });
      paid.catch(() => undefined); // awaited below: no unhandled rejection while the server is down
      expect((await doomed.exited).signal).toBe('SIGKILL');
      // Down for 10 s: longer than five jittered retries can take (300 + 600 + … + 4 800 ms at
      // most), so a count of retries is spent before the server is back.
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      restarted = await spawnServe(common);
      const result = await paid;
      expect([result.status, result.source]).toEqual([201, 'server']);
      expect(dbCount(db, 'SELECT COUNT(*) AS n FROM ledger_entries WHERE idempotency_key = ?', result.key)).toBe(1);
      await client.close();
    } finally {
      await restarted?.stop();
    }
  }, 90_000);
});

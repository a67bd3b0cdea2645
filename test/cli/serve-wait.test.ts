/**
 * `oncely serve` processes holding a duplicate for the original's answer (issue 18): the original
 * slowed with `--faults slow:ext2:3000`, the duplicate sent 0.5 s after it, to the same instance
 * (SQLite) or to a second instance on the same PostgreSQL schema (woken by LISTEN/NOTIFY). It gets
 * the original's 201, replayed byte for byte, about when the original answers; with the wait
 * off, 409 as before. The wait budget is 8 s: a duplicate nobody woke would answer ~5 s late.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';
import { postPayment, spawnServe, tempDir, type Served } from '../reference/serve-process.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);
const withServer = await canRunServerTests();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The original on `a`, the duplicate on `b` 0.5 s later: both answers, and when each came. */
async function originalAndDuplicate(a: Served, b: Served, key: string) {
  const t0 = performance.now();
  const original = postPayment(a.url, key).then(async (r) => ({ status: r?.status, body: await r?.text(), at: performance.now() - t0 }));
  await sleep(500);
  const duplicate = await postPayment(b.url, key).then(async (r) => ({
    status: r?.status,
    replay: r?.headers.get('idempotency-replay'),
    body: await r?.text(),
    at: performance.now() - t0,
  }));
  const first = await original;
  console.info(
    `[serve-wait] ${key}: original answered at ${first.at.toFixed(0)} ms, the duplicate (sent at 500 ms) at ${duplicate.at.toFixed(0)} ms: ${duplicate.status}`,
  );
  return { original: first, duplicate };
}

describe('oncely serve: a duplicate waits for the original', () => {
  it('answers a duplicate on the same instance with the original 201, replayed, when the original answers', async () => {
    const a = await spawnServe(['--db', `${dir}/one.db`, '--faults', 'slow:ext2:3000', '--in-flight-wait', '8s', '--quiet']);
    try {
      const { original, duplicate } = await originalAndDuplicate(a, a, 'wait-one');
      expect([original.status, duplicate.status, duplicate.replay]).toEqual([201, 201, 'true']);
      expect(duplicate.body).toBe(original.body);
      expect(duplicate.at - original.at).toBeLessThan(2000);
    } finally {
      await a.stop();
    }
  });

  it('answers 409 at once with --in-flight-wait 0', async () => {
    const a = await spawnServe(['--db', `${dir}/off.db`, '--faults', 'slow:ext2:3000', '--in-flight-wait', '0', '--quiet']);
    try {
      const { original, duplicate } = await originalAndDuplicate(a, a, 'wait-off');
      expect([original.status, duplicate.status]).toEqual([201, 409]);
      expect(duplicate.at).toBeLessThan(original.at);
    } finally {
      await a.stop();
    }
  });

  describe.skipIf(!withServer)('two instances on PostgreSQL', () => {
    it("answers a duplicate sent to instance B with A's 201, replayed, when A answers", async () => {
      const url = await requireServerUrl('serve-wait');
      const schema = `oncely_t_serve_wait_${process.pid}`;
      const common = ['--db', url, '--pg-schema', schema, '--in-flight-wait', '8s', '--quiet'];
      const a = await spawnServe([...common, '--faults', 'slow:ext2:3000']);
      const b = await spawnServe(common);
      try {
        const { original, duplicate } = await originalAndDuplicate(a, b, 'wait-two');
        expect([original.status, duplicate.status, duplicate.replay]).toEqual([201, 201, 'true']);
        expect(duplicate.body).toBe(original.body);
        expect(duplicate.at - original.at).toBeLessThan(2000);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      }
    });
  });
});

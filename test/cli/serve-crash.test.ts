import { afterAll, describe, expect, it } from 'vitest';
import { dbCount, eventually, getJson, paymentBody, postPayment, spawnServe, stepCount, tempDir } from '../reference/serve-process.js';

const POINTS = ['H1_DONE', 'EXT1_SENT', 'EXT1_DONE', 'H2_DONE', 'EXT2_SENT', 'EXT2_DONE'] as const;
const { dir, cleanup } = tempDir();
afterAll(cleanup);

// A short lease so the crashed owner's hold on the key is long gone by the time the next server is up.
const LEASE = ['--lease', '300ms'];

/** Starts a server that SIGKILLs itself right after `point` commits, sends one payment, and returns its exit. */
async function crashAt(db: string, point: string, key: string): Promise<{ signal: NodeJS.Signals | null; answered: boolean }> {
  const server = await spawnServe(['--db', db, ...LEASE, '--recovery-interval', '0', '--faults', `crash-after:${point}:1`]);
  const response = await postPayment(server.url, key, paymentBody(4200, `crash-${point}`));
  const { signal } = await server.exited;
  return { signal, answered: response !== undefined };
}

/** The exactly-once accounting of one payment, read from the server's own database file. */
function effects(db: string, key: string): Record<string, number> {
  return {
    ledger: dbCount(db, 'SELECT COUNT(*) AS n FROM ledger_entries WHERE idempotency_key = ?', key),
    rail: dbCount(db, "SELECT COUNT(*) AS n FROM rail_charges WHERE status = 'applied'"),
    risk: dbCount(db, 'SELECT COUNT(*) AS n FROM risk_checks'),
    H1: stepCount(db, 'H1', key),
    H2: stepCount(db, 'H2', key),
    H3: stepCount(db, 'H3', key),
  };
}
const ONCE = { ledger: 1, rail: 1, risk: 1, H1: 1, H2: 1, H3: 1 };

/** The recovery point the crashed server left on the key row. */
function recoveryPoint(db: string, key: string): string | undefined {
  return POINTS.find((point) => dbCount(db, 'SELECT COUNT(*) AS n FROM oncely_keys WHERE key = ? AND recovery_point = ?', key, point) === 1);
}

describe('oncely serve crash matrix: SIGKILL right after each recovery point', () => {
  it.each(POINTS)('dies at %s, and after a restart a client retry completes the payment once without re-running H1/H2', async (point) => {
    const db = `${dir}/retry-${point}.db`;
    const key = `retry-${point}`;
    const crash = await crashAt(db, point, key);
    expect(crash).toEqual({ signal: 'SIGKILL', answered: false });
    expect(recoveryPoint(db, key)).toBe(point);

    // No recovery worker: only the client's retry can finish it. The retry comes after the dead
    // owner's lease ran out (a restart can be quicker than 300 ms); within it the answer is a
    // 409, which the server tests cover.
    const restarted = await spawnServe(['--db', db, ...LEASE, '--recovery-interval', '0']);
    await new Promise((resolve) => setTimeout(resolve, 350));
    try {
      const retry = await postPayment(restarted.url, key, paymentBody(4200, `crash-${point}`));
      expect(retry?.status).toBe(201);
      const ledger = await getJson<{ count: number }>(restarted.url, '/v1/ledger');
      const charges = await getJson<{ count: number }>(restarted.url, '/v1/rail/charges');
      expect([ledger.body.count, charges.body.count]).toEqual([1, 1]);
      expect(effects(db, key)).toEqual(ONCE);
    } finally {
      await restarted.stop();
    }
  });

  it.each(POINTS)('dies at %s, and after a restart the recovery worker alone completes the payment once', async (point) => {
    const db = `${dir}/worker-${point}.db`;
    const key = `worker-${point}`;
    const crash = await crashAt(db, point, key);
    expect(crash).toEqual({ signal: 'SIGKILL', answered: false });

    const restarted = await spawnServe(['--db', db, ...LEASE, '--recovery-interval', '100ms']);
    try {
      const finished = await eventually(async () => (await getJson(restarted.url, `/v1/idempotency-keys/${key}`)).body['state'] === 'finished');
      expect(finished).toBe(true);
      expect(effects(db, key)).toEqual(ONCE);
      // The stored answer is the 201 the client would have had; its retry now gets it as a replay.
      const replay = await postPayment(restarted.url, key, paymentBody(4200, `crash-${point}`));
      expect(replay?.status).toBe(201);
      expect(replay?.headers.get('idempotency-replay')).toBe('true');
    } finally {
      await restarted.stop();
    }
  });

  it('lets a surviving server sharing the SQLite file finish what a crashed one left at EXT2_SENT', async () => {
    const db = `${dir}/shared.db`;
    const key = 'shared-crash';
    const [doomed, survivor] = await Promise.all([
      spawnServe(['--db', db, ...LEASE, '--recovery-interval', '0', '--faults', 'crash-after:EXT2_SENT:1']),
      spawnServe(['--db', db, ...LEASE, '--recovery-interval', '100ms']),
    ]);
    try {
      expect(await postPayment(doomed.url, key, paymentBody(4200, 'crash-EXT2_SENT'))).toBeUndefined();
      expect((await doomed.exited).signal).toBe('SIGKILL');
      const finished = await eventually(async () => (await getJson(survivor.url, `/v1/idempotency-keys/${key}`)).body['state'] === 'finished');
      expect(finished).toBe(true);
      expect(effects(db, key)).toEqual(ONCE);
    } finally {
      await survivor.stop();
    }
  });
});

/**
 * PROTOCOL.md's response matrix with the PostgreSQL KeyStore under the handler, on a server (when
 * one is reachable) and on PGlite: every answer the handler derives from stored state (replay,
 * 409 from the database clock's lease, 422, 202 then completion, 503 releasing the key, 402
 * replayed) comes out the same as on SQLite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgBackend, openPglite, type PgBackend } from '../support/pg.js';
import { createTestApp, type TestApp } from './fixtures.js';

describe.each([
  ['PostgreSQL', () => openPgBackend('matrix')],
  ['PGlite', () => openPglite('matrix_pglite')],
] as const)('the response matrix on %s', (_name, open) => {
  let backend: PgBackend;
  beforeAll(async () => {
    backend = await open();
  });
  afterAll(() => backend?.close());
  const app = async (options: Parameters<typeof createTestApp>[0] = {}): Promise<TestApp> => createTestApp({ ...options, store: await backend.store() });

  it('executes once, then replays the stored response byte-identically with Idempotency-Replay: true', async () => {
    const t = await app();
    const first = await t.post({ amount: 1250 });
    const body = await first.text();
    const again = await t.post({ amount: 1250 });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers.get('idempotency-replay')).toBe('true');
    expect(again.headers.get('content-type')).toBe('application/json');
    expect(await again.text()).toBe(body);
    expect(await t.count('ledger')).toBe(1);
    expect(t.rail.calls).toBe(1);
  });

  it('answers 409 with a short Retry-After while the owner is working, when duplicates do not wait', async () => {
    const t = await app({ leaseMs: 5000, inFlightWaitMs: 0 });
    let release!: () => void;
    t.rail.gate = new Promise((resolve) => (release = resolve));
    const first = t.post({ amount: 10 });
    while (t.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await t.post({ amount: 10 });
    expect(second.status).toBe(409);
    expect(second.headers.get('retry-after')).toBe('1');
    release();
    expect((await first).status).toBe(201);
    expect(await t.count('ledger')).toBe(1);
  });

  it('holds a duplicate that reaches another instance until the original finishes, then replays it', async () => {
    const schema = backend.newSchema();
    const a = await createTestApp({ store: backend.open(schema) });
    const b = await createTestApp({ store: backend.open(schema) });
    try {
      let release!: () => void;
      a.rail.gate = new Promise((resolve) => (release = resolve));
      const first = a.post({ amount: 10 });
      while (a.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
      let answered = false;
      const second = b.post({ amount: 10 }).finally(() => (answered = true));
      await new Promise((r) => setTimeout(r, 150));
      expect(answered).toBe(false);
      release();
      const [original, duplicate] = await Promise.all([first, second]);
      expect([original.status, duplicate.status]).toEqual([201, 201]);
      expect(duplicate.headers.get('idempotency-replay')).toBe('true');
      expect(await duplicate.text()).toBe(await original.text());
      expect(b.rail.calls + b.risk.calls).toBe(0);
      expect(await a.count('ledger')).toBe(1);
    } finally {
      await Promise.all([a.store.close?.(), b.store.close?.()]);
    }
  });

  it('answers 422 to the same key with another body and keeps the original', async () => {
    const t = await app();
    const original = await (await t.post({ amount: 10 })).text();
    expect((await t.post({ amount: 11 })).status).toBe(422);
    expect(await (await t.post({ amount: 10 })).text()).toBe(original);
    expect(await t.count('ledger')).toBe(1);
  });

  it('answers 400 to an invalid key and stores no row', async () => {
    const t = await app();
    expect((await t.post({ amount: 10 }, { key: 'a b' })).status).toBe(400);
    const rows = await t.store.transaction((tx) => tx.get<{ n: string }>('SELECT count(*) AS n FROM oncely_keys'));
    expect(Number(rows?.n)).toBe(0);
  });

  it('answers 503 when the upstream is unavailable and lets a retry execute afresh', async () => {
    const t = await app();
    t.rail.script.push('unavailable');
    const first = await t.post({ amount: 5 });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    const retry = await t.post({ amount: 5 });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replay')).toBeNull();
    expect(t.rail.applied.size).toBe(1);
  });

  it('answers 202 when the rail times out after applying, then completes on retry without a second charge', async () => {
    const t = await app();
    t.rail.script.push('timeout-after-apply');
    const first = await t.post({ amount: 5 });
    expect(first.status).toBe(202);
    expect(first.headers.get('retry-after')).not.toBeNull();
    const retry = await t.post({ amount: 5 });
    expect(retry.status).toBe(201);
    expect(t.rail.applied.size).toBe(1);
    expect(await t.count('ledger')).toBe(1);
  });

  it('stores a decline (402) and replays it', async () => {
    const t = await app();
    const declined = await t.post({ amount: 2_000_000 });
    const body = await declined.text();
    const replay = await t.post({ amount: 2_000_000 });
    expect([declined.status, replay.status]).toEqual([402, 402]);
    expect(await replay.text()).toBe(body);
    expect(t.rail.calls).toBe(1);
  });

  it('scopes keys per caller: one key from two callers is two operations', async () => {
    const t = await app();
    const acme = await t.post({ amount: 5 }, { key: 'same', token: 'test_acme' });
    const globex = await t.post({ amount: 5 }, { key: 'same', token: 'test_globex' });
    expect([acme.status, globex.status]).toEqual([201, 201]);
    expect(await t.count('ledger')).toBe(2);
  });

  it('executes 100 concurrent copies of one request once', async () => {
    const t = await app();
    const answers = await Promise.all(Array.from({ length: 100 }, () => t.post({ amount: 7 })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(answers.filter((r) => r.status !== 409).length);
    expect(await t.count('ledger')).toBe(1);
    expect(t.rail.applied.size).toBe(1);
  });

  it('lets an afterCommit hook see each recovery point committed alone (each crash-after fault dies exactly there)', async () => {
    const store = await backend.store();
    const seen: string[] = [];
    const t = await createTestApp({
      store,
      hooks: {
        afterCommit: async (point, ref) => {
          const row = await store.load(ref.clientId, ref.key);
          seen.push(`${point} -> ${row?.state === 'finished' ? 'finished' : row?.recoveryPoint}`);
        },
      },
    });
    expect((await t.post({ amount: 7 })).status).toBe(201);
    expect(seen).toEqual(['H1_DONE', 'EXT1_SENT', 'EXT1_DONE', 'H2_DONE', 'EXT2_SENT', 'EXT2_DONE', 'finished'].map((point) => `${point} -> ${point}`));
  });
});

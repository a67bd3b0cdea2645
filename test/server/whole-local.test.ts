/**
 * The steps API on an operation with no external call: its local steps and final step run in the
 * admission's own transaction, with the key and the stored response — one store call, one commit —
 * and a step that throws leaves nothing, not even the key. With an `afterCommit` hook (which must
 * see each point), the steps commit one by one as before.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createIdempotencyHandler } from '../../src/server/index.js';
import type { IdempotencyHandlerOptions, IdempotentOperation } from '../../src/server/index.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { postgresKeyStore } from '../../src/server/postgres.js';
import type { KeyStore } from '../../src/server/store.js';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';

interface Order {
  readonly item: string;
}

const SCHEMA = {
  sqlite:
    'CREATE TABLE IF NOT EXISTS orders (key TEXT NOT NULL, item TEXT NOT NULL); CREATE TABLE IF NOT EXISTS ledger (key TEXT NOT NULL, n INTEGER NOT NULL);',
  postgres: '',
};

/** A store that counts the calls made on it (a `write` by its change's kind: `write:finish`). */
function counted(store: KeyStore): { store: KeyStore; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const wrapped = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return (...args: unknown[]) => {
        const called = name === 'write' ? `write:${(args[1] as { kind: string }).kind}` : name;
        calls[called] = (calls[called] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, calls };
}

/** One local step (the order) and the final step (the ledger line and the response); `fail` makes one of them throw. */
function orderOperation(fail: { step?: boolean; final?: boolean }): IdempotentOperation<Order> {
  return {
    method: 'POST',
    path: '/v1/orders',
    parse: (body) => (typeof (body as { item?: unknown })?.item === 'string' ? { ok: true, input: body as Order } : { ok: false, detail: 'item' }),
    steps: [
      {
        kind: 'local',
        point: 'H1_DONE',
        async run(ctx, tx) {
          await tx.run('INSERT INTO orders (key, item) VALUES ($1, $2)', [ctx.key, ctx.input.item]);
          if (fail.step) throw new Error('the order step failed');
          return { ordered: ctx.input.item };
        },
      },
    ],
    final: {
      kind: 'final',
      async run(ctx, tx) {
        await tx.run('INSERT INTO ledger (key, n) VALUES ($1, $2)', [ctx.key, 1]);
        if (fail.final) throw new Error('the final step failed');
        return { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ordered: ctx.data['ordered'], at: Math.random() }) };
      },
    },
  };
}

describe('the steps API on an operation with no external call', () => {
  const stores: KeyStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close?.();
  });

  async function setUp(fail: { step?: boolean; final?: boolean }, options: Partial<IdempotencyHandlerOptions> = {}) {
    const inner = sqliteKeyStore({ path: ':memory:' });
    stores.push(inner);
    await inner.migrate(SCHEMA);
    const { store, calls } = counted(inner);
    const handler = createIdempotencyHandler({
      store,
      operations: [orderOperation(fail) as IdempotentOperation<unknown>],
      authenticate: () => 'acme',
      ...options,
    });
    const post = async (key: string) => {
      const response = await handler.handle(
        new Request('http://localhost/v1/orders', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ item: 'espresso' }),
        }),
      );
      return { status: response!.status, replay: response!.headers.get('idempotency-replay'), body: await response!.text() };
    };
    const count = (table: string) => inner.transaction(async (tx) => Number((await tx.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))?.n));
    return { inner, calls, post, count, fail };
  }

  it('runs the steps, the key and the stored response as one store call: one transaction, then replays it', async () => {
    const { inner, calls, post, count } = await setUp({});
    const first = await post('k1');
    expect(first).toMatchObject({ status: 201, replay: null });
    expect(JSON.parse(first.body)).toMatchObject({ ordered: 'espresso' });
    expect(calls).toEqual({ beginRequest: 1 });
    expect(await inner.load('acme', 'k1')).toMatchObject({ state: 'finished', response: { status: 201, body: first.body } });
    expect(await post('k1')).toEqual({ status: 201, replay: 'true', body: first.body });
    expect([await count('orders'), await count('ledger')]).toEqual([1, 1]);
  });

  it('keeps nothing, not even the key, when a step throws: 503, and the retry runs afresh', async () => {
    const { inner, post, count, fail } = await setUp({ step: true });
    expect((await post('k2')).status).toBe(503);
    expect(await inner.load('acme', 'k2')).toBeUndefined();
    expect(await count('orders')).toBe(0);
    fail.step = false;
    expect(await post('k2')).toMatchObject({ status: 201, replay: null });
    expect([await count('orders'), await count('ledger')]).toEqual([1, 1]);
  });

  it('rolls the first step back with the key when the final step throws', async () => {
    const { inner, post, count, fail } = await setUp({ final: true });
    expect((await post('k3')).status).toBe(503);
    expect(await inner.load('acme', 'k3')).toBeUndefined();
    expect([await count('orders'), await count('ledger')]).toEqual([0, 0]);
    fail.final = false;
    expect(await post('k3')).toMatchObject({ status: 201, replay: null });
    expect([await count('orders'), await count('ledger')]).toEqual([1, 1]);
  });

  it('commits each point on its own when an afterCommit hook must see them', async () => {
    const points: string[] = [];
    const { calls, post } = await setUp({}, { hooks: { afterCommit: (point) => void points.push(point) } });
    expect((await post('k4')).status).toBe(201);
    expect(points).toEqual(['H1_DONE', 'finished']);
    expect(calls['write:finish']).toBe(1);
  });
});

// A real server: an INSERT waiting for another transaction is what this is about (PGlite has one backend).
const withPostgres = await canRunServerTests();

describe.skipIf(!withPostgres)('the steps API’s whole request on PostgreSQL, while it runs', () => {
  it('answers a duplicate 409 once its wait runs out (not a 503 at the statement timeout), then replays the committed response', async () => {
    const url = await requireServerUrl('whole-local');
    const schema = `oncely_t_whole_local_${process.pid}`;
    const store = postgresKeyStore({ connectionString: url, schema, statementTimeoutMs: 3000 });
    await store.migrate({
      sqlite: '',
      postgres:
        'CREATE TABLE IF NOT EXISTS orders (key TEXT NOT NULL, item TEXT NOT NULL); CREATE TABLE IF NOT EXISTS ledger (key TEXT NOT NULL, n INTEGER NOT NULL);',
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const inside = new Promise<void>((resolve) => (reached = resolve));
    const operation = orderOperation({});
    const step = operation.steps[0]!;
    const holding: IdempotentOperation<Order> = {
      ...operation,
      steps: [
        {
          ...step,
          kind: 'local',
          point: 'H1_DONE',
          run: async (ctx, tx) => {
            const out = await (step as Extract<typeof step, { kind: 'local' }>).run(ctx, tx);
            reached();
            await held;
            return out;
          },
        },
      ],
    };
    const handler = createIdempotencyHandler({ store, operations: [holding as IdempotentOperation<unknown>], authenticate: () => 'acme' });
    const post = async (prefer?: string) => {
      const response = await handler.handle(
        new Request('http://localhost/v1/orders', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'k-held', ...(prefer ? { prefer } : {}) },
          body: JSON.stringify({ item: 'espresso' }),
        }),
      );
      return { status: response!.status, replay: response!.headers.get('idempotency-replay'), body: await response!.text() };
    };
    try {
      const original = post();
      await inside;
      const started = Date.now();
      expect((await post('wait=0')).status).toBe(409);
      expect(Date.now() - started).toBeLessThan(2500);
      release();
      const first = await original;
      expect(first).toMatchObject({ status: 201, replay: null });
      expect(await post('wait=0')).toEqual({ status: 201, replay: 'true', body: first.body });
    } finally {
      release();
      await store.close();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => admin.end());
    }
  });
});

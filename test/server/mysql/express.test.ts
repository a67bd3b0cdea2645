/**
 * The Express middleware with `transaction: true` on MariaDB / MySQL (`mysqlKeyStore` on the app's
 * own mysql2 pool): the handler's INSERT through `tx`, the key and the stored response commit
 * together or not at all; duplicates wait for that commit; hostile text and byte-exact keys
 * survive the round trip. The handler's pauses are gates the test opens, never sleeps.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mysqlKeyStore } from '../../../src/server/mysql.js';
import { idempotent } from '../../../src/server/middleware/express.js';
import type { GuardContext, GuardOptions } from '../../../src/server/middleware/guard.js';
import type { KeyStore } from '../../../src/server/store.js';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../../support/mysql.js';

type Behaviour = (oncely: GuardContext, hold: boolean, body: unknown) => Promise<readonly [number, unknown]>;

async function expressApp(options: GuardOptions, behaviour: Behaviour): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.use(express.json());
  app.post('/orders', idempotent({ ...options, clientId: () => 'acme' }), async (req, res, next) => {
    try {
      const [status, body] = await behaviour(req.oncely!, req.headers['x-hold'] === '1', req.body);
      res.status(status).json(body);
    } catch (error) {
      next(error);
    }
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function gate(): { readonly reached: Promise<void>; open(): void } {
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (open = resolve));
  return { reached, open };
}

const run = await canRunMysqlTests();
let backend: MysqlBackend;
beforeAll(async () => {
  if (run) backend = await openMysqlBackend('express');
});
afterAll(async () => backend?.close());

describe.runIf(run)('Express with transaction: true on MySQL (the app’s own mysql2 pool)', () => {
  let url: string;
  let pool: mysql.Pool;
  let store: KeyStore;
  let app: { url: string; close(): Promise<void> } | undefined;
  let runs: number;

  beforeEach(async () => {
    url = await backend.newDatabase();
    pool = mysql.createPool({ uri: url, connectionLimit: 10 });
    store = mysqlKeyStore({ pool });
    await store.migrate?.({ mysql: 'CREATE TABLE IF NOT EXISTS orders (idem_key VARBINARY(768) NOT NULL, attempt INT NOT NULL, note TEXT)' });
    runs = 0;
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await store.close?.();
    await pool.end();
  });

  const start = async (behaviour: Behaviour, options: Partial<GuardOptions> = {}): Promise<string> => {
    app = await expressApp({ store, transaction: true, ...options }, behaviour);
    return app.url;
  };
  const post = (base: string, key: string, headers: Record<string, string> = {}, body = '{"item":"espresso"}'): Promise<Response> =>
    fetch(`${base}/orders`, { method: 'POST', headers: { 'idempotency-key': key, 'content-type': 'application/json', ...headers }, body });
  const ledger = async (key: string) => ({
    orders: (await backend.query<{ attempt: number }>(url, 'SELECT attempt FROM orders WHERE idem_key = ? ORDER BY attempt', [key])).map((row) => row.attempt),
    keys: await backend.query(url, 'SELECT state FROM oncely_keys WHERE idem_key = ?', [key]),
  });
  const insert = async (oncely: GuardContext, status = 201, note: unknown = null): Promise<readonly [number, unknown]> => {
    const attempt = (runs += 1);
    await oncely.tx!.run('INSERT INTO orders (idem_key, attempt, note) VALUES ($1, $2, $3)', [oncely.key, attempt, note]);
    return [status, { attempt, note }];
  };

  it('commits the key, the order and the stored response together: none is visible while the handler runs', async () => {
    const inserted = gate();
    const proceed = gate();
    const base = await start(async (oncely) => {
      const answer = await insert(oncely);
      inserted.open();
      await proceed.reached;
      return answer;
    });
    const pending = post(base, 'k-commit');
    await inserted.reached;
    expect(await ledger('k-commit')).toEqual({ orders: [], keys: [] });
    proceed.open();
    const response = await pending;
    expect({ status: response.status, body: await response.json() }).toEqual({ status: 201, body: { attempt: 1, note: null } });
    expect(await ledger('k-commit')).toEqual({ orders: [1], keys: [{ state: 'finished' }] });
    const replay = await post(base, 'k-commit');
    expect({ status: replay.status, replay: replay.headers.get('idempotency-replay'), body: await replay.json() }).toEqual({
      status: 201,
      replay: 'true',
      body: { attempt: 1, note: null },
    });
    expect(runs).toBe(1);
  });

  it('leaves neither the order nor the key when the handler INSERTs and answers 500; the retry runs afresh', async () => {
    let status = 500;
    const base = await start((oncely) => insert(oncely, status));
    const failed = await post(base, 'k-500');
    expect(failed.status).toBe(500);
    await failed.arrayBuffer();
    expect(await ledger('k-500')).toEqual({ orders: [], keys: [] });
    status = 201;
    const retried = await post(base, 'k-500');
    expect({ status: retried.status, replay: retried.headers.get('idempotency-replay') }).toEqual({ status: 201, replay: null });
    await retried.arrayBuffer();
    expect(await ledger('k-500')).toEqual({ orders: [2], keys: [{ state: 'finished' }] });
  });

  it('ends a handler’s transaction idle past its lease: a duplicate owns the key, the late attempt commits nothing even when it swallows the failure', async () => {
    const held = gate();
    const proceed = gate();
    let fencedOut: unknown;
    const reported: unknown[] = [];
    const base = await start(
      async (oncely, hold) => {
        if (!hold) return insert(oncely);
        const attempt = (runs += 1);
        held.open();
        await proceed.reached;
        try {
          await oncely.tx!.run('INSERT INTO orders (idem_key, attempt) VALUES ($1, $2)', [oncely.key, attempt]);
        } catch (error) {
          fencedOut = error; // an app that logs and answers anyway
        }
        return [201, { attempt, note: null }];
      },
      { leaseMs: 1_000, onError: (error) => reported.push(error) },
    );
    const first = post(base, 'k-idle', { 'x-hold': '1' });
    await held.reached;
    // The duplicate waits at the key's row lock until the server ends the idle transaction (after
    // the lease, in whole seconds), then owns the key and runs.
    let duplicate = await post(base, 'k-idle');
    while (duplicate.status === 409) {
      await duplicate.arrayBuffer();
      duplicate = await post(base, 'k-idle');
    }
    expect({ status: duplicate.status, body: await duplicate.json() }).toEqual({ status: 201, body: { attempt: 2, note: null } });
    proceed.open();
    const late = await first;
    expect(late.status).toBe(409);
    await late.arrayBuffer();
    expect(fencedOut).toMatchObject({ name: 'LeaseLostError', code: 'OLOST' });
    expect(reported).toEqual([expect.objectContaining({ message: expect.stringContaining('the lease ran out') })]);
    expect(await ledger('k-idle')).toEqual({ orders: [2], keys: [{ state: 'finished' }] });
    expect(runs).toBe(2);
  });

  it('holds duplicates while the original’s transaction is open, then replays its answer to each', async () => {
    const inserted = gate();
    const proceed = gate();
    const base = await start(async (oncely, hold) => {
      const answer = await insert(oncely);
      if (hold) {
        inserted.open();
        await proceed.reached;
      }
      return answer;
    });
    const original = post(base, 'k-held', { 'x-hold': '1' });
    await inserted.reached;
    const duplicates = [post(base, 'k-held'), post(base, 'k-held'), post(base, 'k-held')];
    await new Promise((resolve) => setTimeout(resolve, 200));
    proceed.open();
    const answers = await Promise.all(
      [original, ...duplicates].map(async (r) => {
        const response = await r;
        return { status: response.status, replay: response.headers.get('idempotency-replay'), body: (await response.json()) as unknown };
      }),
    );
    const replayed = { status: 201, replay: 'true', body: { attempt: 1, note: null } };
    expect(answers).toEqual([{ status: 201, replay: null, body: { attempt: 1, note: null } }, replayed, replayed, replayed]);
    expect(runs).toBe(1);
  });

  it('runs 100 identical concurrent POSTs once: the rest get the replay or 409', { timeout: 60_000 }, async () => {
    const base = await start((oncely) => insert(oncely));
    const answers = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const response = await post(base, 'k-100');
        return { status: response.status, replay: response.headers.get('idempotency-replay'), body: (await response.json()) as unknown };
      }),
    );
    const original = answers.filter((answer) => answer.status === 201 && answer.replay === null);
    const replays = answers.filter((answer) => answer.status === 201 && answer.replay === 'true');
    const inFlight = answers.filter((answer) => answer.status === 409);
    expect(original).toEqual([{ status: 201, replay: null, body: { attempt: 1, note: null } }]);
    expect(replays.every((answer) => JSON.stringify(answer.body) === '{"attempt":1,"note":null}')).toBe(true);
    expect(original.length + replays.length + inFlight.length).toBe(100);
    expect(runs).toBe(1);
    expect(await ledger('k-100')).toEqual({ orders: [1], keys: [{ state: 'finished' }] });
  });

  it('keeps hostile text verbatim and keys byte-exact: case and a 255-character key are keys of their own', async () => {
    const hostile = "it's '; DROP TABLE oncely_keys; -- \\ $1 ? /* Zürich 日本 😀 \u202Eevil";
    const base = await start((oncely, _hold, sent) => insert(oncely, 201, (sent as { note: string }).note));
    const body = JSON.stringify({ note: hostile });
    const long = `k${'x'.repeat(254)}`;
    for (const key of ['Case-A', 'case-a', long]) {
      const first = await post(base, key, {}, body);
      expect({ status: first.status, replay: first.headers.get('idempotency-replay'), body: await first.json() }).toMatchObject({
        status: 201,
        replay: null,
        body: { note: hostile },
      });
      const again = await post(base, key, {}, body);
      expect({ status: again.status, replay: again.headers.get('idempotency-replay'), body: await again.json() }).toMatchObject({
        status: 201,
        replay: 'true',
        body: { note: hostile },
      });
    }
    expect(runs).toBe(3);
    const notes = await backend.query<{ note: string }>(url, 'SELECT note FROM orders ORDER BY attempt');
    expect(notes.map((row) => row.note)).toEqual([hostile, hostile, hostile]);
  });
});

/**
 * One default for the response cap, and the middleware's cap never above its store's: the guard
 * takes the store's own `maxResponseBytes` when none is given, refuses a larger one when it is
 * built (an `InvalidOptionError` naming both numbers), and a store's cap is checked when the store
 * is built.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../../src/server/errors/invalid-option-error.js';
import { createGuard } from '../../src/server/middleware/guard.js';
import { SERVER_DEFAULTS } from '../../src/server/options.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import type { Guard, GuardedRequest } from '../../src/server/middleware/guard.js';

/** A built-in store: every optional member of the contract present. */
type SqliteStore = ReturnType<typeof sqliteKeyStore>;

const stores: SqliteStore[] = [];
afterAll(() => Promise.all(stores.map((store) => store.close())));

async function storeCapped(maxResponseBytes?: number): Promise<SqliteStore> {
  const store = sqliteKeyStore(maxResponseBytes === undefined ? { path: ':memory:' } : { path: ':memory:', maxResponseBytes });
  await store.migrate();
  stores.push(store);
  return store;
}

const request = (key: string): GuardedRequest => ({
  clientId: 'acme',
  keyHeader: key,
  method: 'POST',
  route: '/x',
  path: '/x',
  contentType: null,
  body: { none: true },
  prefer: null,
});

/** Runs the handler of `key` once with a `bytes`-byte body, then replays it: what the replay's body is. */
async function storedThenReplayed(guard: Guard, key: string, bytes: number): Promise<string> {
  const decision = await guard.decide(request(key));
  if (decision.kind !== 'run') throw new Error(`expected to run, got ${decision.kind}`);
  const sent = await decision.execution.complete({ status: 201, headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(bytes) });
  expect(sent).toMatchObject({ status: 201, body: 'x'.repeat(bytes) });
  const replay = await guard.decide(request(key));
  if (replay.kind !== 'answer') throw new Error(`expected a replay, got ${replay.kind}`);
  expect(replay.response.status).toBe(201);
  expect(replay.response.headers['idempotency-replay']).toBe('true');
  return String(replay.response.body);
}

describe('the response cap', () => {
  it('defaults to one constant, 64 KiB, for the built-in store and for the middleware over it: a body of exactly the cap is replayed verbatim, one byte more is not stored', async () => {
    expect(SERVER_DEFAULTS.maxResponseBytes).toBe(65_536);
    const store = await storeCapped();
    expect(store.maxResponseBytes).toBe(SERVER_DEFAULTS.maxResponseBytes);
    const guard = createGuard({ store });
    expect(await storedThenReplayed(guard, 'k-at-cap', 65_536)).toBe('x'.repeat(65_536));
    expect(await storedThenReplayed(guard, 'k-over-cap', 65_537)).toContain('response-not-stored');
  });

  // With `transaction: true` a cap above the store's would make the store refuse the commit: the
  // handler's writes rolled back and a 503 sent after the handler ran.
  it.each([false, true])(
    "follows the store's cap when the middleware is given none (transaction: %s): within it replayed verbatim, over it delivered once and replayed as not stored",
    async (transaction) => {
      const guard = createGuard({ store: await storeCapped(1000), transaction });
      expect(await storedThenReplayed(guard, 'k-small', 1000)).toBe('x'.repeat(1000));
      expect(await storedThenReplayed(guard, 'k-big', 1001)).toContain('response-not-stored');
    },
  );

  it("refuses a middleware cap above the store's when the middleware is built, naming both numbers", async () => {
    const store = await storeCapped(1000);
    let thrown: unknown;
    try {
      createGuard({ store, maxResponseBytes: 2000 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidOptionError);
    expect(thrown).toMatchObject({ option: 'maxResponseBytes', code: 'CONFIG' });
    expect((thrown as Error).message).toMatch(/maxResponseBytes.*\b1000\b.*\b2000\b/);
  });

  it("accepts a middleware cap at or below the store's, and stores what fits within the smaller one", async () => {
    const store = await storeCapped(1000);
    expect(() => createGuard({ store, maxResponseBytes: 1000 })).not.toThrow();
    const guard = createGuard({ store, maxResponseBytes: 500 });
    expect(await storedThenReplayed(guard, 'k-500', 500)).toBe('x'.repeat(500));
    expect(await storedThenReplayed(guard, 'k-501', 501)).toContain('response-not-stored');
  });

  it("refuses a store's own cap that is not an integer ≥ 0 when the store is built", () => {
    expect(() => sqliteKeyStore({ path: ':memory:', maxResponseBytes: -1 })).toThrow(InvalidOptionError);
    expect(() => sqliteKeyStore({ path: ':memory:', maxResponseBytes: 1.5 })).toThrow(/maxResponseBytes/);
  });
});

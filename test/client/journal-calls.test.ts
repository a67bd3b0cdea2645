import { describe, expect, it } from 'vitest';
import { createClient, memoryJournal } from '../../src/index.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';

/** A memory journal that records which of its methods were called, in order. */
function counting(inner: Journal = memoryJournal()): { journal: Journal; calls: string[] } {
  const calls: string[] = [];
  const journal = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { journal, calls };
}

describe('journal traffic of one operation', () => {
  it('post(): the record is written claimed before the attempt, not read back nor claimed again, and a settled operation needs no release', async () => {
    const { journal, calls } = counting();
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: async () => new Response('{"ok":true}', { status: 201 }) });
    expect((await client.post('v1/payments', { json: { amount: 1 } })).status).toBe(201);
    expect(calls).toEqual(['put', 'update']);
    await client.close();
  });

  it('post() on the SQLite journal: the outcome is written behind (updateLater), not awaited', async () => {
    const { journal, calls } = counting(sqliteJournal({ path: ':memory:' }));
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: async () => new Response('{"ok":true}', { status: 201 }) });
    const { key } = await client.post('v1/payments', { json: { amount: 1 } });
    expect(calls).toEqual(['put', 'updateLater']);
    expect((await journal.get(client.scope, key))?.state).toBe('succeeded');
    await journal.close();
  });

  it('post() on a journal that ignores the claim asked with put: claims before the attempt, as prepare() does', async () => {
    const { journal, calls } = counting();
    // A third-party journal that predates NewOperation.claim: it stores the record unclaimed.
    const legacy: typeof journal = { ...journal, kind: journal.kind, put: async ({ claim: _ignored, ...operation }) => journal.put(operation) };
    const client = createClient({ baseUrl: 'http://api.test', journal: legacy, fetch: async () => new Response('{"ok":true}', { status: 201 }) });
    expect((await client.post('v1/payments', { json: { amount: 1 } })).status).toBe(201);
    expect(calls).toEqual(['put', 'claim', 'update']);
    await client.close();
  });

  it('prepare() then send(): the record is read again at send time, and claimed before it is marked submitted', async () => {
    const { journal, calls } = counting();
    const client = createClient({ baseUrl: 'http://api.test', journal, fetch: async () => new Response('{"ok":true}', { status: 201 }) });
    const op = await client.prepare('POST', 'v1/payments', { json: { amount: 1 } });
    await op.send();
    // The claim taken before the submittedAt write stands for the first attempt's: no resume()
    // elsewhere can take the operation up between its submission and that attempt. The record
    // is read again under it: another tab may have submitted (and sent) it since the first read.
    expect(calls).toEqual(['put', 'get', 'claim', 'get', 'update', 'update']);
    await client.close();
  });

  it('releases its claim when the operation stays pending (a 503 beyond the retry budget)', async () => {
    const { journal, calls } = counting();
    const client = createClient({
      baseUrl: 'http://api.test',
      journal,
      retry: { limit: 0 },
      fetch: async () => new Response('busy', { status: 503, headers: { 'retry-after': '0' } }),
    });
    await expect(client.post('v1/payments', { json: { amount: 1 } })).rejects.toThrow();
    expect(calls.at(-1)).toBe('release');
    expect((await journal.list()).map((r) => r.state)).toEqual(['pending']);
    await client.close();
  });
});

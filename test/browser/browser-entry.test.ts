/**
 * The browser entry as a page gets it, in Chromium: its default journal is IndexedDB, and
 * Chromium's own fetch failures count as unknown outcomes (retried, then left pending), never
 * as failures.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, createClient, indexedDbJournal, isOncelyError, type Client } from '../../src/browser.js';

/** Nothing listens on the discard port: every attempt is refused by the network stack. */
const UNREACHABLE = 'http://127.0.0.1:9/';
const json = { amount: 1250, currency: 'EUR', reference: 'browser-entry' };
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

describe('createClient from the browser entry in Chromium', () => {
  it('journals a prepared operation in the IndexedDB database "oncely" when no journal is given', async () => {
    const client = createClient({ baseUrl: UNREACHABLE });
    clients.push(client);

    const operation = await client.prepare('POST', 'v1/payments', { json });

    expect(client.journal.kind).toBe('indexeddb');
    const other = indexedDbJournal();
    try {
      expect((await other.get(client.scope, operation.key))?.state).toBe('pending');
    } finally {
      await other.close();
    }
  });

  it('keeps an operation pending, never failed, when Chromium cannot reach the server', async () => {
    const client = createClient({
      baseUrl: UNREACHABLE,
      journal: indexedDbJournal({ dbName: `oncely-entry-${Date.now()}` }),
      retry: { limit: 1, backoffMs: 10 },
    });
    clients.push(client);
    const operation = await client.prepare('POST', 'v1/payments', { json });

    const error: unknown = await operation.send().then(
      () => undefined,
      (reason: unknown) => reason,
    );

    expect(isOncelyError(error, ErrorCode.OperationPending)).toBe(true);
    const record = await client.journal.get(client.scope, operation.key);
    expect(record).toMatchObject({ state: 'pending', attempts: 2, lastStatus: null });
    expect((await client.pending()).map((pending) => pending.key)).toEqual([operation.key]);
  });
});

import 'fake-indexeddb/auto';
import { createStore, entries, set } from 'idb-keyval';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { operation } from '../contract/journal.contract.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

const rejection = async (promise: Promise<unknown>, dbName: string): Promise<JournalError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JournalError);
  expect((error as JournalError).path).toBe(dbName);
  return error as JournalError;
};

describe('IndexedDB journal on a database it cannot use', () => {
  it('refuses a database of the same name that has no operations store, and leaves it alone', async () => {
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.open('someone-elses', 1);
      request.onupgradeneeded = () => request.result.createObjectStore('carts');
      request.onsuccess = () => {
        request.result.close();
        resolve();
      };
      request.onerror = () => reject(request.error);
    });
    const journal = indexedDbJournal({ dbName: 'someone-elses', locks: null });
    const error = await rejection(journal.put(operation()), 'someone-elses');
    expect(error.message).toMatch(/not an oncely journal/);
    expect(error.hint).toMatch(/own dbName/);
    const names = await new Promise<string[]>((resolve) => {
      const request = indexedDB.open('someone-elses');
      request.onsuccess = () => {
        resolve([...request.result.objectStoreNames]);
        request.result.close();
      };
    });
    expect(names).toEqual(['carts']);
  });

  it('refuses a journal written by a newer schema without touching its records', async () => {
    const store = createStore('from-the-future', 'operations');
    await set(['meta'], { schema: 99, seq: 1 }, store);
    await set('0193b8a0-0000-7000-8000-000000000001', { future: true }, store);
    const journal = indexedDbJournal({ dbName: 'from-the-future', locks: null });
    const error = await rejection(journal.list(), 'from-the-future');
    expect(error.message).toMatch(/newer/);
    await rejection(journal.put(operation()), 'from-the-future');
    expect(await entries(store)).toEqual([
      ['0193b8a0-0000-7000-8000-000000000001', { future: true }],
      [['meta'], { schema: 99, seq: 1 }],
    ]);
  });

  it('says what to use instead when the runtime has no IndexedDB', async () => {
    vi.stubGlobal('indexedDB', undefined);
    const journal = indexedDbJournal({ dbName: 'nowhere', locks: null });
    const error = await rejection(journal.put(operation()), 'nowhere');
    expect(error.message).toMatch(/not available/);
    expect(error.hint).toMatch(/sqliteJournal/);
  });
});

/**
 * The IndexedDB side of the browser journal: one idb-keyval custom store, opened lazily, and
 * transactions that resolve only once IndexedDB reports them complete.
 *
 * @module
 * @internal
 */
import { createStore, type UseStore } from 'idb-keyval';
import { JournalError } from '../errors.js';
import type { OperationRecord } from './types.js';

/** What is stored under each operation key. */
export interface Row {
  readonly record: OperationRecord;
  /** Insertion order, the tie-break of `list()` for equal `createdAt`. */
  readonly seq: number;
  /** Lease-record claim (unused when Web Locks hold the claims). */
  readonly claimOwner: string | null;
  readonly claimedUntil: number | null;
}

/** The `['meta']` entry: schema version and the last insertion counter. */
export interface Meta {
  readonly schema: number;
  readonly seq: number;
}

/** The one object store of a journal database. */
export const STORE = 'operations';
/** The row layout this code reads and writes. */
export const SCHEMA = 1;
/** Where {@link Meta} lives: an array key sorts after every operation key. */
export const META_KEY = ['meta'];
/** Every string key: strings sort before arrays in IndexedDB's key order. */
export const OPERATIONS = (): IDBKeyRange => IDBKeyRange.upperBound([], true);

/** Runs `work` in one transaction; see {@link journalStore}. */
export type Transact = <T>(mode: IDBTransactionMode, work: (store: IDBObjectStore, finish: (value: T) => void) => void) => Promise<T>;

/** Access to one journal database. */
export interface JournalStore {
  readonly transact: Transact;
  /** Closes the connection, if one was opened; later transactions reject. */
  close(): Promise<void>;
}

/**
 * Opens (lazily) the journal database `dbName`. Every transaction first checks, once per
 * store, that the database is not from a newer schema, and turns IndexedDB failures into a
 * `JournalError` naming the database.
 */
export function journalStore(dbName: string): JournalStore {
  let closed = false;
  const fail = (message: string, hint: string, cause?: unknown): JournalError =>
    new JournalError(message, { path: dbName, hint, cause });

  let useStore: UseStore | undefined;

  // One IndexedDB transaction; resolves with what `work` reported once the transaction has
  // committed, so a resolved write is on disk (as far as the browser promises).
  const raw = <T>(mode: IDBTransactionMode, work: (store: IDBObjectStore, finish: (value: T) => void) => void): Promise<T> => {
    useStore ??= createStore(dbName, STORE);
    return useStore(mode, (store) => new Promise<T>((resolve, reject) => {
      let value: T | undefined;
      const tx = store.transaction;
      tx.oncomplete = () => resolve(value as T);
      tx.onabort = () => reject(tx.error ?? new DOMException('transaction aborted', 'AbortError'));
      work(store, (result) => {
        value = result;
      });
    }));
  };

  // Checked once per journal: a database written by a newer oncely may store rows differently.
  let verified: Promise<void> | undefined;
  const verify = (): Promise<void> =>
    raw<Meta | undefined>('readonly', (store, finish) => {
      const request = store.get(META_KEY);
      request.onsuccess = () => finish(request.result as Meta | undefined);
    }).then((meta) => {
      if (meta && meta.schema > SCHEMA) {
        throw fail(`the IndexedDB journal has schema version ${meta.schema}, newer than the ${SCHEMA} this oncely knows`, 'upgrade oncely, or give this app another dbName');
      }
    });

  const transact = async <T>(mode: IDBTransactionMode, work: (store: IDBObjectStore, finish: (value: T) => void) => void): Promise<T> => {
    if (closed) throw fail('the IndexedDB journal is closed', 'create a new journal with indexedDbJournal()');
    if (typeof indexedDB === 'undefined') {
      throw fail('IndexedDB is not available here', 'use sqliteJournal() in Node, or memoryJournal() if losing operations on exit is acceptable');
    }
    try {
      verified ??= verify().catch((error: unknown) => {
        verified = undefined;
        throw error;
      });
      await verified;
      return await raw(mode, work);
    } catch (error) {
      throw toJournalError(error);
    }
  };

  const toJournalError = (error: unknown): JournalError => {
    if (error instanceof JournalError) return error;
    const name = error instanceof Error || error instanceof DOMException ? error.name : '';
    if (name === 'NotFoundError') {
      return fail(`the IndexedDB database has no "${STORE}" store: it is not an oncely journal`, 'give the journal its own dbName', error);
    }
    if (name === 'QuotaExceededError') return fail('the browser refused to store more data', 'free storage for this site, then retry', error);
    return fail(`the IndexedDB journal failed (${String(error)})`, 'see the cause; nothing was deleted', error);
  };

  return {
    transact,
    async close() {
      if (closed) return;
      if (useStore) await useStore('readonly', (store) => store.transaction.db.close());
      closed = true;
    },
  };
}

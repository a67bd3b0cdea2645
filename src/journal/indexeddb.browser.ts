/**
 * The IndexedDB journal for browsers: a pending checkout survives a reload or a closed tab and
 * is resumed with the same key and bytes.
 *
 * Storage is one idb-keyval custom store. Each value is a `Row`; one extra entry under
 * the array key `['meta']` holds the schema version and an insertion counter (array keys sort
 * after every string key, so a key range over strings never sees it). Every method is one
 * IndexedDB transaction, and `readwrite` transactions on one store run one at a time across
 * tabs, which is what makes `put` and the lease-record claim atomic.
 *
 * Durability: a call resolves once its transaction has completed, i.e. the browser has the write
 * and it survives a reload, a closed tab or a crashed browser. Whether it is flushed to disk
 * before that (power loss) is the browser's choice for idb-keyval's default transactions.
 *
 * @module
 */
import { JournalError } from '../errors.js';
import { rowInserter } from './indexeddb-insert.browser.js';
import { OPERATIONS, journalStore, readRow, rowKey, type Row } from './indexeddb-store.browser.js';
import { portableSeal } from './seal.js';
import { OperationState } from './types.js';
import type { DamagedRecord, Journal, OperationRecord, PutOutcome } from './types.js';
import { webLockClaims, type LockRequester } from './web-locks.js';

/**
 * Options of {@link indexedDbJournal}.
 *
 * @example
 * ```ts
 * const options: IndexedDbJournalOptions = { dbName: 'checkout' };
 * ```
 */
export interface IndexedDbJournalOptions {
  /**
   * The IndexedDB database name; give each app (or each user of a shared device) its own.
   *
   * @default 'oncely'
   * @example
   * ```ts
   * indexedDbJournal({ dbName: 'checkout-journal' });
   * ```
   */
  readonly dbName?: string;
  /**
   * How claims are held across tabs: the Web Locks API (`navigator.locks`, the default where
   * present), or `null` for lease records written in the store (the fallback elsewhere).
   *
   * @default navigator.locks when present, else null
   * @example
   * ```ts
   * indexedDbJournal({ locks: null }); // force lease records
   * ```
   */
  readonly locks?: LockRequester | null;
}

/**
 * A {@link Journal} backed by IndexedDB.
 *
 * @example
 * ```ts
 * const journal: IndexedDbJournal = indexedDbJournal({ dbName: 'checkout' });
 * console.log((await journal.list({ state: 'pending' })).length, 'payments to finish in', journal.dbName);
 * ```
 */
export interface IndexedDbJournal extends Journal {
  readonly kind: 'indexeddb';
  readonly dbName: string;
}

/**
 * Creates a journal in IndexedDB (idb-keyval custom store). The database is opened on first
 * use; where IndexedDB is missing or the database belongs to something else, calls reject with
 * a `JournalError`.
 *
 * @example
 * ```ts
 * import { createClient, indexedDbJournal } from 'oncely/browser';
 *
 * const client = createClient({ baseUrl: '/api', journal: indexedDbJournal({ dbName: 'checkout' }) });
 * await client.resume(); // after a reload: finishes the payment the last tab left pending
 * ```
 */
export function indexedDbJournal(options: IndexedDbJournalOptions = {}): IndexedDbJournal {
  const dbName = options.dbName ?? 'oncely';
  const locks = options.locks !== undefined ? options.locks : (globalThis.navigator?.locks ?? null);
  const webLocks = locks ? webLockClaims(locks, dbName) : undefined;
  const { transact, close: closeStore } = journalStore(dbName);

  // A row that cannot be read fails the call about it alone; list() leaves it out.
  const stored = (storeKey: string, value: unknown): Row | undefined => {
    if (value === undefined) return undefined;
    const read = readRow(storeKey, value);
    if ('row' in read) return read.row;
    throw new JournalError(`the journal row for Idempotency-Key ${read.damaged.key} is damaged: ${read.damaged.reason}`, {
      path: dbName,
      hint: 'it is left as it is; client.pending() lists it',
      damaged: read.damaged,
    });
  };

  const insertAll = rowInserter({ transact, webLocks, stored });

  // Read-modify-write of one row inside one readwrite transaction.
  // A damaged row is passed to `change` as absent: nothing is written over it.
  const modify = <T>(id: string, change: (row: Row | undefined) => { readonly row?: Row; readonly result: T }): Promise<T> =>
    transact<T>('readwrite', (store, finish) => {
      const request = store.get(id);
      request.onsuccess = () => {
        const read = request.result === undefined ? undefined : readRow(id, request.result);
        const outcome = change(read !== undefined && 'row' in read ? read.row : undefined);
        if (outcome.row) store.put(outcome.row, id);
        finish(outcome.result);
      };
    });

  const read = async (id: string): Promise<OperationRecord | undefined> => {
    const value = await transact<unknown>('readonly', (store, finish) => {
      const request = store.get(id);
      request.onsuccess = () => finish(request.result);
    });
    return stored(id, value)?.record;
  };

  // Every stored row, sorted into readable rows and damaged ones.
  const rows = async (): Promise<{ readonly healthy: Row[]; readonly damaged: DamagedRecord[] }> => {
    const entries = await transact<Array<[string, unknown]>>('readonly', (store, finish) => {
      const values = store.getAll(OPERATIONS());
      const keys = store.getAllKeys(OPERATIONS());
      keys.onsuccess = () => finish((keys.result as string[]).map((key, i) => [key, (values.result as unknown[])[i]]));
    });
    const healthy: Row[] = [];
    const damaged: DamagedRecord[] = [];
    for (const [key, value] of entries) {
      const row = readRow(key, value);
      if ('row' in row) healthy.push(row.row);
      else damaged.push(row.damaged);
    }
    return { healthy, damaged };
  };

  return {
    kind: 'indexeddb',
    dbName,
    async put(operation) {
      const [outcome] = await insertAll([operation]);
      return outcome as PutOutcome;
    },
    putMany: insertAll,
    get: (scope, key) => read(rowKey(scope, key)),
    async update(scope, key, patch) {
      const record = await modify(rowKey(scope, key), (row) => {
        if (!row) return { result: undefined };
        const next: OperationRecord = { ...row.record, ...patch, updatedAt: Math.max(Date.now(), row.record.updatedAt) };
        const settled = next.state !== OperationState.Pending;
        // Sealed here, in the transaction callback: the row was read back intact (see modify).
        return { row: { ...row, record: next, seal: portableSeal.sealOf(next), ...(settled ? { claimOwner: null, claimedUntil: null } : {}) }, result: next };
      });
      if (record && record.state !== OperationState.Pending) await webLocks?.release(rowKey(scope, key));
      return record;
    },
    async list(filter = {}) {
      const all = (await rows()).healthy
        .filter((row) => filter.scope === undefined || row.record.scope === filter.scope)
        .filter((row) => filter.state === undefined || row.record.state === filter.state)
        .sort((a, b) => a.record.createdAt - b.record.createdAt || a.seq - b.seq)
        .map((row) => row.record);
      return filter.limit === undefined ? all : all.slice(0, filter.limit);
    },
    async damaged(filter = {}) {
      return (await rows()).damaged.filter((row) => filter.scope === undefined || row.scope === filter.scope);
    },
    async claim(scope, key, owner, ttlMs) {
      const id = rowKey(scope, key);
      if (webLocks) {
        if (!(await webLocks.acquire(id, owner, ttlMs))) return false;
        // Checked under the lock: another tab may have settled it before letting go.
        const record = await read(id).catch(() => undefined);
        if (record?.state === OperationState.Pending) return true;
        await webLocks.release(id, owner);
        return false;
      }
      return modify(id, (row) => {
        const now = Date.now();
        if (!row || row.record.state !== OperationState.Pending) return { result: false };
        const free = row.claimedUntil === null || row.claimedUntil <= now || row.claimOwner === owner;
        return free ? { row: { ...row, claimOwner: owner, claimedUntil: now + ttlMs }, result: true } : { result: false };
      });
    },
    async release(scope, key, owner) {
      const id = rowKey(scope, key);
      if (webLocks) {
        await webLocks.release(id, owner);
        return;
      }
      await modify(id, (row) =>
        row?.claimOwner === owner ? { row: { ...row, claimOwner: null, claimedUntil: null }, result: undefined } : { result: undefined },
      );
    },
    async prune(olderThanMs) {
      const cutoff = Date.now() - olderThanMs;
      return transact<number>('readwrite', (store, finish) => {
        let removed = 0;
        const request = store.openCursor(OPERATIONS());
        request.onsuccess = () => {
          const cursor = request.result;
          if (!cursor) {
            finish(removed);
            return;
          }
          const read = readRow(String(cursor.key), cursor.value);
          const record = 'row' in read ? read.row.record : undefined;
          if (record && record.state !== OperationState.Pending && record.updatedAt < cutoff) {
            cursor.delete();
            removed += 1;
          }
          cursor.continue();
        };
      });
    },
    async close() {
      await webLocks?.releaseAll();
      await closeStore();
    },
  };
}

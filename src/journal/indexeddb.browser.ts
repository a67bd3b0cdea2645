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
import { META_KEY, OPERATIONS, SCHEMA, journalStore, type Meta, type Row } from './indexeddb-store.browser.js';
import { OperationState, newRecord, type Journal, type NewOperation, type OperationRecord, type PutOutcome } from './types.js';
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

  // Reads the meta entry first: requests on one store complete in the order they were made.
  const withMeta = (store: IDBObjectStore, next: (meta: Meta) => void): void => {
    const request = store.get(META_KEY);
    request.onsuccess = () => next((request.result as Meta | undefined) ?? { schema: SCHEMA, seq: 0 });
  };

  // Rows written before `submittedAt` existed lack it. That code resent every pending record on
  // resume(), so they read as submitted when journaled: the same behaviour for the same rows.
  const withDefaults = (row: Row): Row =>
    row.record.submittedAt === undefined ? { ...row, record: { ...row.record, submittedAt: row.record.createdAt } } : row;
  const stored = (value: unknown): Row | undefined => (value === undefined ? undefined : withDefaults(value as Row));

  const newRow = (operation: NewOperation, seq: number, now: number): Row => ({
    record: newRecord(operation, now),
    seq,
    claimOwner: null,
    claimedUntil: null,
  });

  const insertAll = (operations: readonly NewOperation[]): Promise<PutOutcome[]> =>
    transact<PutOutcome[]>('readwrite', (store, finish) => {
      const now = Date.now();
      const outcomes: PutOutcome[] = [];
      const inBatch = new Map<string, OperationRecord>();
      withMeta(store, (meta) => {
        let seq = meta.seq;
        let index = 0;
        // One request at a time, in order, so a key repeated within the batch sees the first.
        const step = (): void => {
          const operation = operations[index];
          if (operation === undefined) {
            store.put({ schema: SCHEMA, seq } satisfies Meta, META_KEY);
            finish(outcomes);
            return;
          }
          index += 1;
          const seen = inBatch.get(operation.key);
          if (seen) {
            outcomes.push({ created: false, record: seen });
            step();
            return;
          }
          const request = store.get(operation.key);
          request.onsuccess = () => {
            const existing = stored(request.result);
            if (existing) {
              outcomes.push({ created: false, record: existing.record });
            } else {
              seq += 1;
              const row = newRow(operation, seq, now);
              store.put(row, operation.key);
              inBatch.set(operation.key, row.record);
              outcomes.push({ created: true, record: row.record });
            }
            step();
          };
        };
        step();
      });
    });

  // Read-modify-write of one row inside one readwrite transaction.
  const modify = <T>(key: string, change: (row: Row | undefined) => { readonly row?: Row; readonly result: T }): Promise<T> =>
    transact<T>('readwrite', (store, finish) => {
      const request = store.get(key);
      request.onsuccess = () => {
        const outcome = change(stored(request.result));
        if (outcome.row) store.put(outcome.row, key);
        finish(outcome.result);
      };
    });

  const read = (key: string): Promise<OperationRecord | undefined> =>
    transact<OperationRecord | undefined>('readonly', (store, finish) => {
      const request = store.get(key);
      request.onsuccess = () => finish(stored(request.result)?.record);
    });

  const rows = (): Promise<Row[]> =>
    transact<Row[]>('readonly', (store, finish) => {
      const request = store.getAll(OPERATIONS());
      request.onsuccess = () => finish((request.result as Row[]).map(withDefaults));
    });

  return {
    kind: 'indexeddb',
    dbName,
    async put(operation) {
      const [outcome] = await insertAll([operation]);
      return outcome as PutOutcome;
    },
    putMany: insertAll,
    get: read,
    async update(key, patch) {
      const record = await modify(key, (row) => {
        if (!row) return { result: undefined };
        const next: OperationRecord = { ...row.record, ...patch, updatedAt: Math.max(Date.now(), row.record.updatedAt) };
        const settled = next.state !== OperationState.Pending;
        return { row: { ...row, record: next, ...(settled ? { claimOwner: null, claimedUntil: null } : {}) }, result: next };
      });
      if (record && record.state !== OperationState.Pending) await webLocks?.release(key);
      return record;
    },
    async list(filter = {}) {
      const all = (await rows())
        .filter((row) => filter.state === undefined || row.record.state === filter.state)
        .sort((a, b) => a.record.createdAt - b.record.createdAt || a.seq - b.seq)
        .map((row) => row.record);
      return filter.limit === undefined ? all : all.slice(0, filter.limit);
    },
    async claim(key, owner, ttlMs) {
      if (webLocks) {
        if (!(await webLocks.acquire(key, owner, ttlMs))) return false;
        // Checked under the lock: another tab may have settled it before letting go.
        const record = await read(key);
        if (record?.state === OperationState.Pending) return true;
        await webLocks.release(key, owner);
        return false;
      }
      return modify(key, (row) => {
        const now = Date.now();
        if (!row || row.record.state !== OperationState.Pending) return { result: false };
        const free = row.claimedUntil === null || row.claimedUntil <= now || row.claimOwner === owner;
        return free ? { row: { ...row, claimOwner: owner, claimedUntil: now + ttlMs }, result: true } : { result: false };
      });
    },
    async release(key, owner) {
      if (webLocks) {
        await webLocks.release(key, owner);
        return;
      }
      await modify(key, (row) =>
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
          const { record } = cursor.value as Row;
          if (record.state !== OperationState.Pending && record.updatedAt < cutoff) {
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

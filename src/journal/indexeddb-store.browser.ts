/**
 * The IndexedDB side of the browser journal: one idb-keyval custom store, opened lazily, and
 * transactions that resolve only once IndexedDB reports them complete.
 *
 * @module
 * @internal
 */
import { createStore, type UseStore } from 'idb-keyval';
import { JournalError } from '../errors.js';
import { portableSeal } from './seal.js';
import { JOURNALED_HEADERS, OperationState, type DamagedRecord, type OperationRecord } from './types.js';

/** What is stored under each operation's {@link rowKey}. */
export interface Row {
  readonly record: OperationRecord;
  /** Insertion order, the tie-break of `list()` for equal `createdAt`. */
  readonly seq: number;
  /** Lease-record claim (unused when Web Locks hold the claims). */
  readonly claimOwner: string | null;
  readonly claimedUntil: number | null;
  /** See `seal.ts`: written with every change of `record` (claims are not sealed). */
  readonly seal: string;
}

/** The `['meta']` entry: schema version and the last insertion counter. */
export interface Meta {
  readonly schema: number;
  readonly seq: number;
}

/** The one object store of a journal database. */
export const STORE = 'operations';
/**
 * The row layout this code reads and writes.
 *
 * | schema | layout                                                                         |
 * |--------|--------------------------------------------------------------------------------|
 * | 1      | rows stored under their idempotency key                                        |
 * | 2      | rows stored under {@link rowKey} (scope + key), records carry `scope`; rows of |
 * |        | schema 1 are moved on first open (scope = their URL's origin), their headers   |
 * |        | cut to the allow-list                                                          |
 * | 3      | rows carry a `seal` (see `seal.ts`); every readable row is sealed as it is     |
 * |        | found on first open (trusted then, checked from then on)                       |
 */
export const SCHEMA = 3;

/** The store key of an operation: idempotency keys hold no space, so the pair is unambiguous. */
export const rowKey = (scope: string, key: string): string => `${scope} ${key}`;

const STATES: ReadonlySet<unknown> = new Set(Object.values(OperationState));

/** The row stored at `storeKey`, or what is wrong with it: a value no version of oncely wrote, or one changed since it was sealed. */
export function readRow(storeKey: string, value: unknown): { readonly row: Row } | { readonly damaged: DamagedRecord } {
  const read = parseRow(storeKey, value);
  if ('damaged' in read) return read;
  const { record } = read.row;
  // The store key is not sealed: a value moved under another key would be read as that key's.
  const moved = storeKey === rowKey(record.scope, record.key) ? undefined : 'it is stored under another key than its own';
  const reason = moved ?? portableSeal.sealDamage(record, read.row.seal);
  return reason === undefined ? read : { damaged: { ...damagedAt(storeKey), reason } };
}

/** The scope and key a store key names, as far as they can be told. */
function damagedAt(storeKey: string): Omit<DamagedRecord, 'reason'> {
  const space = storeKey.lastIndexOf(' ');
  return space < 0 ? { scope: null, key: storeKey } : { scope: storeKey.slice(0, space), key: storeKey.slice(space + 1) };
}

/** {@link readRow} without the seal: whether the value has a row's shape (an older layout's too). */
function parseRow(storeKey: string, value: unknown): { readonly row: Row } | { readonly damaged: DamagedRecord } {
  const row = value as Partial<Row> | null;
  const record = (typeof row === 'object' && row !== null ? row.record : undefined) as Partial<OperationRecord> | undefined;
  const damaged = (reason: string): { damaged: DamagedRecord } => ({ damaged: { ...damagedAt(storeKey), reason } });
  if (typeof record !== 'object' || record === null) return damaged('it holds no operation record');
  if (typeof record.url !== 'string' || !URL.canParse(record.url)) return damaged('its URL does not parse');
  if (typeof record.headers !== 'object' || record.headers === null) return damaged('its headers are not a map');
  if (!STATES.has(record.state)) return damaged(`its state ${JSON.stringify(record.state)} is unknown`);
  if (typeof record.method !== 'string' || typeof record.fingerprint !== 'string' || typeof record.createdAt !== 'number') {
    return damaged('its method, fingerprint or timestamps are missing');
  }
  return { row: row as Row };
}

/** A schema-1 row as schema 2 stores it: scoped by its URL's origin, headers allow-listed. */
function scopeRow(row: Row): Row {
  const record = row.record as OperationRecord;
  const headers = Object.fromEntries(Object.entries(record.headers).filter(([name]) => JOURNALED_HEADERS.has(name)));
  // Rows written before `submittedAt` existed lack it; that code resent every pending record on
  // resume(), so they read as submitted when journaled: the same behaviour for the same rows.
  const submittedAt = record.submittedAt === undefined ? record.createdAt : record.submittedAt;
  return { ...row, record: { ...record, scope: new URL(record.url).origin, headers, submittedAt } };
}
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
  const fail = (message: string, hint: string, cause?: unknown): JournalError => new JournalError(message, { path: dbName, hint, cause });

  let useStore: UseStore | undefined;

  // One IndexedDB transaction; resolves with what `work` reported once the transaction has
  // committed, so a resolved write is on disk (as far as the browser promises).
  const raw = <T>(mode: IDBTransactionMode, work: (store: IDBObjectStore, finish: (value: T) => void) => void): Promise<T> => {
    useStore ??= createStore(dbName, STORE);
    return useStore(
      mode,
      (store) =>
        new Promise<T>((resolve, reject) => {
          let value: T | undefined;
          const tx = store.transaction;
          tx.oncomplete = () => resolve(value as T);
          tx.onabort = () => reject(tx.error ?? new DOMException('transaction aborted', 'AbortError'));
          work(store, (result) => {
            value = result;
          });
        }),
    );
  };

  // Checked once per journal: a database written by a newer oncely may store rows differently,
  // and one of an older layout is brought up to date (one transaction: all rows or none).
  let verified: Promise<void> | undefined;
  const verify = (): Promise<void> =>
    raw<Meta | undefined>('readonly', (store, finish) => {
      const request = store.get(META_KEY);
      request.onsuccess = () => finish(request.result as Meta | undefined);
    }).then(async (meta) => {
      if (meta && meta.schema > SCHEMA) {
        throw fail(
          `the IndexedDB journal has schema version ${meta.schema}, newer than the ${SCHEMA} this oncely knows`,
          'upgrade oncely, or give this app another dbName',
        );
      }
      if (meta !== undefined && meta.schema < SCHEMA) await raw('readwrite', (store, finish) => upgrade(store, finish));
    });

  // Schema 1 → 2: every row moves from its idempotency key to rowKey(scope, key). 2 → 3: every
  // row is sealed as it is found. A row that cannot be read stays as it is (and is reported as damaged).
  const upgrade = (store: IDBObjectStore, finish: (value: undefined) => void): void => {
    const request = store.openCursor(OPERATIONS());
    request.onsuccess = () => {
      const cursor = request.result;
      if (!cursor) {
        const meta = store.get(META_KEY);
        meta.onsuccess = () => {
          store.put({ ...(meta.result as Meta), schema: SCHEMA } satisfies Meta, META_KEY);
          finish(undefined);
        };
        return;
      }
      const storeKey = String(cursor.key);
      const read = parseRow(storeKey, cursor.value);
      if ('row' in read) {
        const moved = !storeKey.includes(' ');
        const row = moved ? scopeRow(read.row) : read.row;
        store.put({ ...row, seal: portableSeal.sealOf(row.record) } satisfies Row, rowKey(row.record.scope, row.record.key));
        if (moved) cursor.delete();
      }
      cursor.continue();
    };
  };

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

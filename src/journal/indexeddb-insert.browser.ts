/**
 * The IndexedDB journal's `put()` and `putMany()`: new rows written in one transaction, each
 * with its seal, and the claim `put()` is asked for held from the write itself (a lease record
 * in the row, or a Web Lock taken before the row exists).
 *
 * @module
 * @internal
 */
import { META_KEY, SCHEMA, rowKey, type Meta, type Row, type Transact } from './indexeddb-store.browser.js';
import { portableSeal } from './seal.js';
import { newRecord, replacesRefused, type NewOperation, type OperationRecord, type PutOutcome } from './types.js';
import type { WebLockClaims } from './web-locks.js';

/** What the inserter needs of its journal. */
export interface InserterContext {
  readonly transact: Transact;
  /** The journal's Web Locks, or `undefined` when claims are lease records. */
  readonly webLocks: WebLockClaims | undefined;
  /** The row stored at a store key, or `undefined`; throws a `JournalError` when it is damaged. */
  readonly stored: (storeKey: string, value: unknown) => Row | undefined;
}

// Reads the meta entry first: requests on one store complete in the order they were made.
const withMeta = (store: IDBObjectStore, next: (meta: Meta) => void): void => {
  const request = store.get(META_KEY);
  request.onsuccess = () => next((request.result as Meta | undefined) ?? { schema: SCHEMA, seq: 0 });
};

/**
 * The journal's insertion of new operations, `Journal.put`'s rule for each: an existing record is
 * kept, unless a corrected request replaces a refused one.
 *
 * @example
 * ```ts
 * const insertAll = rowInserter({ transact, webLocks, stored });
 * const [outcome] = await insertAll([{ ...operation, submitted: true, claim: { owner, ttlMs: 30_000 } }]);
 * ```
 * @internal
 */
export function rowInserter(context: InserterContext): (operations: readonly NewOperation[]) => Promise<PutOutcome[]> {
  const { transact, webLocks, stored } = context;
  // A claim asked for is written in the row itself (lease records), or is the Web Lock that
  // `insertAll` took before the row existed: `claimed` says which rows hold one.
  const newRow = (operation: NewOperation, seq: number, now: number, claimed: boolean): Row => {
    const lease = claimed && !webLocks && operation.claim !== undefined;
    const record = newRecord(operation, now);
    return {
      record,
      seq,
      claimOwner: lease ? (operation.claim?.owner ?? null) : null,
      claimedUntil: lease ? now + (operation.claim?.ttlMs ?? 0) : null,
      seal: portableSeal.sealOf(record),
    };
  };

  // With Web Locks the claim `put()` is asked for is the lock, taken *before* the row is written:
  // no other tab can claim a record between its creation and its first attempt. A lock that is
  // not free (another tab holds this key) leaves that operation unclaimed.
  const lockClaims = async (operations: readonly NewOperation[]): Promise<boolean[]> =>
    Promise.all(
      operations.map(({ scope, key, claim }) => (claim === undefined ? false : (webLocks?.acquire(rowKey(scope, key), claim.owner, claim.ttlMs) ?? true))),
    );

  // Locks taken for rows that were not created (the key existed) are given back: the existing
  // record and whoever holds it stay as they were.
  const unlockUnused = async (operations: readonly NewOperation[], locked: readonly boolean[], outcomes?: readonly PutOutcome[]): Promise<void> => {
    if (!webLocks) return;
    const ids = operations.map((operation) => rowKey(operation.scope, operation.key));
    const created = new Set(ids.filter((_, index) => outcomes?.[index]?.created === true));
    const unused = operations.filter((_, index) => locked[index] === true && !created.has(ids[index] as string));
    await Promise.all(unused.map((operation) => webLocks.release(rowKey(operation.scope, operation.key), operation.claim?.owner)));
  };

  const insertAll = async (operations: readonly NewOperation[]): Promise<PutOutcome[]> => {
    const locked = webLocks ? await lockClaims(operations) : operations.map((operation) => operation.claim !== undefined);
    // An existing row under a new operation's key that cannot be read: nothing is written.
    let damaged: unknown;
    let outcomes: PutOutcome[];
    try {
      outcomes = await insertAllOnce(operations, locked, (error) => {
        damaged = error;
      });
    } catch (error) {
      await unlockUnused(operations, locked);
      throw damaged ?? error;
    }
    await unlockUnused(operations, locked, outcomes);
    return outcomes;
  };

  const insertAllOnce = (operations: readonly NewOperation[], locked: readonly boolean[], onDamaged: (error: unknown) => void): Promise<PutOutcome[]> =>
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
          const id = rowKey(operation.scope, operation.key);
          const seen = inBatch.get(id);
          if (seen) {
            outcomes.push({ created: false, record: seen });
            step();
            return;
          }
          const request = store.get(id);
          request.onsuccess = () => {
            let existing: Row | undefined;
            try {
              existing = stored(id, request.result);
            } catch (error) {
              onDamaged(error);
              store.transaction.abort();
              return;
            }
            if (existing && !replacesRefused(existing.record, operation)) {
              outcomes.push({ created: false, record: existing.record });
            } else {
              seq += 1;
              const claimed = locked[index - 1] === true;
              const row = newRow(operation, seq, now, claimed);
              store.put(row, id);
              inBatch.set(id, row.record);
              outcomes.push({ created: true, record: row.record, ...(claimed ? { claimed: true } : {}) });
            }
            step();
          };
        };
        step();
      });
    });

  return insertAll;
}

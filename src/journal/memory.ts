/**
 * An in-memory journal: for tests and for callers who explicitly accept that a crash loses
 * their pending operations. Never chosen by default.
 *
 * @module
 */
import { compositeId } from '../composite-id.js';
import {
  OperationState,
  type Journal,
  type ListFilter,
  type NewOperation,
  type OperationPatch,
  type OperationRecord,
  type PutOutcome,
  newRecord,
  replacesRefused,
} from './types.js';

interface Claim {
  readonly owner: string;
  readonly until: number;
}

/**
 * Creates a journal that lives in this process's memory only.
 *
 * @example
 * ```ts
 * const client = createClient({ baseUrl, journal: memoryJournal() });
 * ```
 */
export function memoryJournal(): Journal {
  // Keyed by scope and key, length-prefixed: no pair can spell another's identity.
  const records = new Map<string, OperationRecord>();
  const claims = new Map<string, Claim>();
  const id = (scope: string, key: string): string => compositeId(scope, key);
  let closed = false;

  const open = (): void => {
    if (closed) throw new Error('memoryJournal: the journal is closed');
  };

  const insert = (operation: NewOperation): PutOutcome => {
    const existing = records.get(id(operation.scope, operation.key));
    if (existing && !replacesRefused(existing, operation)) return { created: false, record: existing };
    const record = newRecord(operation, Date.now());
    records.set(id(record.scope, record.key), record);
    const { claim } = operation;
    if (claim === undefined) claims.delete(id(record.scope, record.key));
    else claims.set(id(record.scope, record.key), { owner: claim.owner, until: record.updatedAt + claim.ttlMs });
    return { created: true, record, ...(claim === undefined ? {} : { claimed: true }) };
  };

  return {
    kind: 'memory',
    async put(operation) {
      open();
      return insert(operation);
    },
    async putMany(operations) {
      open();
      return operations.map(insert);
    },
    async get(scope, key) {
      open();
      return records.get(id(scope, key));
    },
    async update(scope, key, patch: OperationPatch) {
      open();
      const current = records.get(id(scope, key));
      if (!current) return undefined;
      const next: OperationRecord = { ...current, ...patch, updatedAt: Math.max(Date.now(), current.updatedAt) };
      records.set(id(scope, key), next);
      if (next.state !== OperationState.Pending) claims.delete(id(scope, key));
      return next;
    },
    async list(filter: ListFilter = {}) {
      open();
      const all = [...records.values()]
        .filter((record) => filter.scope === undefined || record.scope === filter.scope)
        .filter((record) => filter.state === undefined || record.state === filter.state)
        .sort((a, b) => a.createdAt - b.createdAt);
      return filter.limit === undefined ? all : all.slice(0, filter.limit);
    },
    async damaged() {
      open();
      // Records live as objects this module wrote: none can be unreadable.
      return [];
    },
    async claim(scope, key, owner, ttlMs) {
      open();
      const record = records.get(id(scope, key));
      if (!record || record.state !== OperationState.Pending) return false;
      const now = Date.now();
      const held = claims.get(id(scope, key));
      if (held && held.owner !== owner && held.until > now) return false;
      claims.set(id(scope, key), { owner, until: now + ttlMs });
      return true;
    },
    async release(scope, key, owner) {
      open();
      if (claims.get(id(scope, key))?.owner === owner) claims.delete(id(scope, key));
    },
    async prune(olderThanMs) {
      open();
      const cutoff = Date.now() - olderThanMs;
      let removed = 0;
      for (const [key, record] of records) {
        if (record.state !== OperationState.Pending && record.updatedAt < cutoff) {
          records.delete(key);
          claims.delete(key);
          removed += 1;
        }
      }
      return removed;
    },
    async close() {
      closed = true;
    },
  };
}

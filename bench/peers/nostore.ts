/**
 * A key store that keeps its rows in a Map and writes nothing anywhere: the floor under oncely's
 * first execution, i.e. what the handler, the steps and the HTTP stack cost with no database.
 * Diagnostic only (`bench/peer-cpu.ts oncely-nostore`): it has no durability, no other process
 * sees its keys, and the application's statements are not run (each "changes" one row).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { admittedRow } from '../../src/server/store/core.js';
import {
  admitFirst,
  planWrite,
  type AdmitInput,
  type AdmitResult,
  type FirstPhase,
  type KeyRow,
  type KeyStore,
  type Lease,
  type RowChange,
  type Tx,
  type WholeRequest,
} from '../../src/server/store.js';

/**
 * The Map-backed store; each call resolves on the next turn of the event loop, as a group commit
 * would.
 *
 * @example
 * ```ts
 * const store = noStore();
 * ```
 */
export function noStore(): KeyStore {
  const rows = new Map<string, KeyRow & { token: string | null }>();
  const tx: Tx = { dialect: 'sqlite', run: async () => 1, all: async () => [], get: async () => undefined };
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const id = (clientId: string, key: string): string => `${clientId}\u001f${key}`;
  const held = (lease: Lease) => {
    const row = rows.get(id(lease.clientId, lease.key));
    return row && row.state === 'started' && row.token === lease.token ? row : undefined;
  };
  const applied = (row: KeyRow, change: RowChange, token: string): KeyRow & { token: string | null } => ({
    ...row,
    recoveryPoint: change.recoveryPoint ?? row.recoveryPoint,
    data: { ...row.data, ...change.data },
    ...(change.response ? { state: 'finished' as const, response: change.response } : {}),
    leaseRemainingMs: change.leaseMs,
    attempts: row.attempts + (change.retryAfterMs === undefined ? 0 : 1),
    token: change.leaseMs === null ? null : token,
  });
  const unsupported = (what: string) => (): never => {
    throw new Error(`noStore: ${what} is not implemented (a diagnostic store)`);
  };
  return {
    dialect: 'sqlite',
    migrate: async () => undefined,
    async admit<T>(input: AdmitInput, first?: FirstPhase<T> | WholeRequest<T>): Promise<AdmitResult<T>> {
      await turn();
      const existing = rows.get(id(input.clientId, input.key));
      if (existing) return { owned: false, row: existing };
      const token = randomUUID();
      const at = Date.now();
      const row = admittedRow(input, at, at + input.ttlMs);
      const lease = { clientId: input.clientId, key: input.key, token };
      if (!first) {
        rows.set(id(input.clientId, input.key), { ...row, token });
        return { owned: true, lease, row };
      }
      if ('response' in first) return unsupported('a whole request')();
      return admitFirst({ owned: true, lease, row }, first, tx, (change) => void rows.set(id(input.clientId, input.key), applied(row, change, token)), {
        store: 'noStore',
        key: input.key,
        maxResponseBytes: 65_536,
      });
    },
    // Every write is the core's row change (`planWrite`), applied to the Map's row.
    async write(lease, change, work) {
      await turn();
      const row = held(lease);
      if (!row) return { ok: false as const };
      const value = work ? await work(tx) : undefined;
      const next = planWrite(change, value, { store: 'noStore', key: lease.key, maxResponseBytes: 65_536 });
      if (next.deleteIfNoPoint && row.recoveryPoint === null) rows.delete(id(lease.clientId, lease.key));
      else rows.set(id(lease.clientId, lease.key), applied(row, next, lease.token));
      return { ok: true as const, value };
    },
    load: async (clientId, key) => rows.get(id(clientId, key)),
    transaction: async (work) => work(tx),
    takeOver: unsupported('takeOver'),
    sweep: async () => [],
    reap: async () => 0,
    close: async () => undefined,
  };
}

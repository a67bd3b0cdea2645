/**
 * A key store that keeps its rows in a Map and writes nothing anywhere: the floor under oncely's
 * first execution, i.e. what the handler, the steps and the HTTP stack cost with no database.
 * Diagnostic only (`bench/peer-cpu.ts oncely-nostore`): it has no durability, no other process
 * sees its keys, and the application's statements are not run (each "changes" one row).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { admittedRow, isWholeRequest, pointOf } from '../../src/server/store/core.js';
import type { WholeRequest } from '../../src/server/store/types.js';
import type {
  AdmitInput,
  AdmitResult,
  FinalResponse,
  FirstPhase,
  KeyRow,
  KeyStore,
  Lease,
  PhaseCommit,
  PointWrite,
  StoredResponse,
  Tx,
} from '../../src/server/store/types.js';

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
  const merge = (row: KeyRow, point: PointWrite): KeyRow => ({ ...row, recoveryPoint: point.recoveryPoint, data: { ...row.data, ...point.data } });
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
      if (isWholeRequest(first)) return unsupported('a whole request')();
      const value = await first.work(tx);
      const phased = merge(row, pointOf(first.phase, value));
      rows.set(id(input.clientId, input.key), { ...phased, token });
      return { owned: true, lease, row: phased, first: { value } };
    },
    beginRequest: unsupported('a whole request'),
    async commitPhase<T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>) {
      await turn();
      const row = held(lease);
      if (!row) return { ok: false as const };
      const value = work ? await work(tx) : undefined;
      rows.set(id(lease.clientId, lease.key), { ...merge(row, pointOf(phase, value)), token: lease.token });
      return { ok: true as const, value };
    },
    async finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, before?: PointWrite) {
      await turn();
      const row = held(lease);
      if (!row) return { ok: false as const };
      const value = work ? await work(tx) : undefined;
      const stored: StoredResponse = typeof response === 'function' ? response(value) : response;
      rows.set(id(lease.clientId, lease.key), {
        ...(before ? { ...merge(row, before), token: row.token } : row),
        state: 'finished',
        response: stored,
        leaseRemainingMs: null,
        token: null,
      });
      return { ok: true as const, value };
    },
    load: async (clientId, key) => rows.get(id(clientId, key)),
    transaction: async (work) => work(tx),
    takeOver: unsupported('takeOver'),
    release: async () => true,
    park: async () => true,
    sweep: async () => [],
    reap: async () => 0,
    close: async () => undefined,
  };
}

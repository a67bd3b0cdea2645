/**
 * A model of the KeyStore contract (src/server/store/types.ts) for fast-check's model-based
 * runs: one client's key rows, each with its state, recovery point, data, response, lease and
 * retry time, and the effects its phases' work committed. Every command runs against the model
 * and a real store, and the two must agree on every answer and, after every command, on every
 * row. A concurrent command starts several calls at once, in an order fast-check's scheduler
 * picks, and passes when some serial order of them explains what the store answered and left.
 *
 * The commands that drive it are in ./keystore-commands.ts.
 *
 * Time: the model has a clock. A store with an injectable clock (SQLite) runs on it and the
 * `advance` command moves both; a store on its database's clock (PostgreSQL) is given only
 * durations of 0 (over by the next statement) or an hour (never over during a run), and the model
 * clock stays put.
 *
 * @module
 */
import { expect } from 'vitest';
import type { KeyRow, KeyStore, Lease, StoredResponse, Tx } from '../../../../src/server/store/types.js';

/** A duration that never runs out during a run. */
export const HOUR = 3_600_000;
export const KEYS = ['k0', 'k1', 'k2'] as const;
export const HASHES = ['a'.repeat(64), 'b'.repeat(64)] as const;
export const POINTS = ['H1_DONE', 'EXT1_SENT', 'EXT1_DONE', 'H2_DONE'] as const;

/** The application table the phases' work writes to. */
export const EFFECTS_SCHEMA = {
  sqlite: 'CREATE TABLE IF NOT EXISTS model_effects (client_id TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL)',
  postgres: 'CREATE TABLE IF NOT EXISTS model_effects (client_id TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL)',
};

interface ModelRow {
  readonly requestHash: string;
  readonly state: 'started' | 'finished';
  readonly point: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  readonly response: StoredResponse | null;
  /** `id`: which lease (by the order leases were handed out) holds the row. */
  readonly lease: { readonly id: number; readonly until: number } | null;
  readonly attempts: number;
  readonly nextAttemptAt: number;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** The model: rows by key, effects by key, and the key of every lease handed out so far. */
export interface StoreModel {
  clock: number;
  rows: Map<string, ModelRow>;
  effects: Map<string, number>;
  leaseKeys: string[];
}

/** The real side: the store, this run's client, its clock (when the store takes one), the leases. */
export interface RealStore {
  readonly store: KeyStore;
  readonly clientId: string;
  readonly clock: { now: number } | undefined;
  readonly leases: Lease[];
}

export type Work = 'none' | 'insert' | 'throw';

/** One call on the store. `lease` picks among the leases handed out before the command. */
export type Op =
  | { readonly kind: 'admit'; readonly key: string; readonly hash: string; readonly leaseMs: number; readonly ttlMs: number }
  | { readonly kind: 'takeOver'; readonly key: string; readonly leaseMs: number }
  | {
      readonly kind: 'commit';
      readonly lease: number;
      readonly point: string;
      readonly data: Readonly<Record<string, unknown>>;
      readonly leaseMs: number;
      readonly work: Work;
    }
  | { readonly kind: 'finish'; readonly lease: number; readonly status: number; readonly work: Work }
  | { readonly kind: 'release'; readonly lease: number; readonly forget: boolean }
  | { readonly kind: 'park'; readonly lease: number; readonly retryAfterMs: number };

/** What a call answered, as both sides can say it (lease tokens are the store's own). */
export type Answer =
  | { readonly owned: true }
  | { readonly owned: false; readonly state: string; readonly requestHash: string; readonly point: string | null }
  | { readonly won: boolean }
  | { readonly ok: boolean }
  | { readonly threw: true }
  | { readonly done: boolean };

const WORK_FAILED = 'the phase work failed';
const response = (status: number): StoredResponse => ({ status, headers: { 'content-type': 'application/json' }, body: `{"status":${status},"text":"é ✓"}` });

export function cloneModel(model: StoreModel): StoreModel {
  return { clock: model.clock, rows: new Map(model.rows), effects: new Map(model.effects), leaseKeys: [...model.leaseKeys] };
}

/** The row `lease` may write: started and held by exactly that lease. */
function fencedRow(model: StoreModel, lease: number): ModelRow | undefined {
  const row = model.rows.get(model.leaseKeys[lease] as string);
  return row && row.state === 'started' && row.lease?.id === lease ? row : undefined;
}

/** Applies `op` to the model; `newLease` is the id a lease handed out by this call gets. */
export function applyOp(model: StoreModel, op: Op, newLease: number): Answer {
  const { clock } = model;
  switch (op.kind) {
    case 'admit': {
      const row = model.rows.get(op.key);
      if (row) return { owned: false, state: row.state, requestHash: row.requestHash, point: row.point };
      model.rows.set(op.key, {
        requestHash: op.hash,
        state: 'started',
        point: null,
        data: {},
        response: null,
        lease: { id: newLease, until: clock + op.leaseMs },
        attempts: 0,
        nextAttemptAt: Number.NEGATIVE_INFINITY,
        createdAt: clock,
        expiresAt: clock + op.ttlMs,
      });
      model.leaseKeys[newLease] = op.key;
      return { owned: true };
    }
    case 'takeOver': {
      const row = model.rows.get(op.key);
      if (!row || row.state !== 'started' || (row.lease !== null && row.lease.until > clock)) return { won: false };
      model.rows.set(op.key, { ...row, lease: { id: newLease, until: clock + op.leaseMs } });
      model.leaseKeys[newLease] = op.key;
      return { won: true };
    }
    case 'commit':
    case 'finish': {
      const row = fencedRow(model, op.lease);
      if (!row) return { ok: false };
      if (op.work === 'throw') return { threw: true };
      const key = model.leaseKeys[op.lease] as string;
      if (op.work === 'insert') model.effects.set(key, (model.effects.get(key) ?? 0) + 1);
      if (op.kind === 'commit') {
        model.rows.set(key, { ...row, point: op.point, data: { ...row.data, ...op.data }, lease: { id: op.lease, until: clock + op.leaseMs } });
      } else {
        // A finished key is kept its retention from now.
        model.rows.set(key, { ...row, state: 'finished', response: response(op.status), lease: null, expiresAt: clock + (row.expiresAt - row.createdAt) });
      }
      return { ok: true };
    }
    case 'release': {
      const row = fencedRow(model, op.lease);
      if (!row) return { done: false };
      const key = model.leaseKeys[op.lease] as string;
      // A row with a recovery point records work that happened: kept whatever `forget` says.
      if (op.forget && row.point === null) model.rows.delete(key);
      else model.rows.set(key, { ...row, lease: null });
      return { done: true };
    }
    case 'park': {
      const row = fencedRow(model, op.lease);
      if (!row) return { done: false };
      model.rows.set(model.leaseKeys[op.lease] as string, { ...row, lease: null, attempts: row.attempts + 1, nextAttemptAt: clock + op.retryAfterMs });
      return { done: true };
    }
  }
}

/** Runs `op` on the store; a lease it hands out is returned beside the answer. */
export async function runOp(real: RealStore, op: Op): Promise<{ readonly answer: Answer; readonly lease?: Lease }> {
  const { store, clientId } = real;
  const work = (kind: Work, key: string) =>
    kind === 'none'
      ? undefined
      : async (tx: Tx) => {
          await tx.run('INSERT INTO model_effects (client_id, key, n) VALUES ($1, $2, $3)', [clientId, key, 1]);
          if (kind === 'throw') throw new Error(WORK_FAILED);
        };
  const fenced = async (call: () => Promise<{ ok: boolean }>): Promise<{ answer: Answer }> => {
    try {
      return { answer: { ok: (await call()).ok } };
    } catch (error) {
      if ((error as Error).message !== WORK_FAILED) throw error;
      return { answer: { threw: true } };
    }
  };
  switch (op.kind) {
    case 'admit': {
      const result = await store.admit({
        clientId,
        key: op.key,
        requestHash: op.hash,
        endpoint: 'POST /v1/model',
        requestBody: '{}',
        leaseMs: op.leaseMs,
        ttlMs: op.ttlMs,
      });
      if (result.owned) return { answer: { owned: true }, lease: result.lease };
      return { answer: { owned: false, state: result.row!.state, requestHash: result.row!.requestHash, point: result.row!.recoveryPoint } };
    }
    case 'takeOver': {
      const lease = await store.takeOver(clientId, op.key, op.leaseMs);
      return lease ? { answer: { won: true }, lease } : { answer: { won: false } };
    }
    case 'commit': {
      const lease = real.leases[op.lease] as Lease;
      return fenced(() => store.write(lease, { kind: 'phase', recoveryPoint: op.point, data: op.data, leaseMs: op.leaseMs }, work(op.work, lease.key)));
    }
    case 'finish': {
      const lease = real.leases[op.lease] as Lease;
      return fenced(() => store.write(lease, { kind: 'finish', response: response(op.status) }, work(op.work, lease.key)));
    }
    case 'release':
      return { answer: { done: (await store.write(real.leases[op.lease] as Lease, { kind: 'release', forget: op.forget })).ok } };
    case 'park':
      return { answer: { done: (await store.write(real.leases[op.lease] as Lease, { kind: 'park', retryAfterMs: op.retryAfterMs })).ok } };
  }
}

export const hasLease = (answer: Answer): boolean => ('owned' in answer && answer.owned) || ('won' in answer && answer.won);

/** Every row and every effect count of the store equals the model's. */
export async function expectSameState(model: StoreModel, real: RealStore): Promise<void> {
  const exact = real.clock !== undefined;
  for (const key of KEYS) {
    const row: KeyRow | undefined = await real.store.load(real.clientId, key);
    const expected = model.rows.get(key);
    if (!expected) {
      expect(row, `row ${key}`).toBeUndefined();
    } else {
      expect(row, `row ${key}`).toBeDefined();
      const { leaseRemainingMs, createdAt, expiresAt, state, requestHash, recoveryPoint, data, response: stored, attempts } = row as KeyRow;
      expect({ state, requestHash, recoveryPoint, data, response: stored, attempts }, `row ${key}`).toEqual({
        state: expected.state,
        requestHash: expected.requestHash,
        recoveryPoint: expected.point,
        data: expected.data,
        response: expected.response,
        attempts: expected.attempts,
      });
      if (expected.lease === null) {
        expect(leaseRemainingMs, `lease of ${key}`).toBeNull();
      } else {
        const left = Math.max(0, expected.lease.until - model.clock);
        if (exact) expect(leaseRemainingMs, `lease of ${key}`).toBe(left);
        else if (left === 0) expect(leaseRemainingMs, `lease of ${key}`).toBe(0);
        else expect(leaseRemainingMs, `lease of ${key}`).toBeGreaterThan(0);
      }
      if (exact) expect({ createdAt, expiresAt }, `times of ${key}`).toEqual({ createdAt: expected.createdAt, expiresAt: expected.expiresAt });
    }
  }
  const rows = await real.store.transaction((tx) =>
    tx.all<{ key: string; n: number | string }>('SELECT key, COUNT(*) AS n FROM model_effects WHERE client_id = $1 GROUP BY key', [real.clientId]),
  );
  const effects = Object.fromEntries(rows.map(({ key, n }) => [key, Number(n)]));
  expect(effects, 'effects').toEqual(Object.fromEntries([...model.effects].filter(([, n]) => n > 0)));
}

/** An empty model at `clock`. */
export function emptyModel(clock: number): StoreModel {
  return { clock, rows: new Map(), effects: new Map(), leaseKeys: [] };
}

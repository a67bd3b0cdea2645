/**
 * A model of the Journal contract (src/journal/types.ts) for fast-check's model-based runs, shared
 * by the Node backends (memory, SQLite) and the browser's (IndexedDB): records by scope and key,
 * the put rule (never overwrite, except a failed request whose key the server never consumed),
 * updates, listing, claims by owner with an expiry, release and pruning. Every command runs on the
 * model and on a journal and both must agree on every answer and on every record afterwards.
 * Concurrent commands start several calls on one record at once, in an order fast-check's
 * scheduler picks, and pass when a serial order of them explains the answers and the records.
 *
 * Claims cannot be read back, so two serial orders may explain a race equally well and leave
 * different claims (tab A's claim for an hour, or for no time at all). The model therefore keeps
 * every state some serial order leads to, and each later command keeps those that explain what
 * the journal then does; it fails when none is left.
 *
 * Time is `Date` only, faked (`vi.useFakeTimers({ toFake: ['Date'] })`), as in the contract suite:
 * the model's clock is the journal's.
 *
 * The commands that drive it are in ./journal-commands.ts. No Node built-ins here or there: the
 * browser suite imports both.
 *
 * @module
 */
import fc from 'fast-check';
import { expect, vi } from 'vitest';
import type { Journal, NewOperation, OperationPatch, OperationRecord } from '../../../src/journal/types.js';

export const HOUR = 3_600_000;

/** One state of the journal: records by `scope key` (no key holds a space), claims likewise, and the clock. */
export interface State {
  now: number;
  records: Map<string, OperationRecord>;
  claims: Map<string, { readonly owner: string; readonly until: number }>;
}

/** The model: every state the journal may be in after the calls so far (see the module comment). */
export interface JournalModel {
  states: State[];
}

const id = (scope: string, key: string): string => `${scope} ${key}`;

export function cloneState(state: State): State {
  return { now: state.now, records: new Map(state.records), claims: new Map(state.claims) };
}

/** Structural equality of JSON-like values, member order ignored, `undefined` members absent. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const defined = (value: object): Array<[string, unknown]> => Object.entries(value).filter(([, v]) => v !== undefined);
  const [ea, eb] = [defined(a), defined(b)];
  return ea.length === eb.length && ea.every(([name, value]) => same(value, (b as Record<string, unknown>)[name]));
}

export const order = (a: OperationRecord, b: OperationRecord): number => a.createdAt - b.createdAt || id(a.scope, a.key).localeCompare(id(b.scope, b.key));

/** The journal's records are the state's (in any order among equal createdAt). */
const sameRecords = (state: State, records: readonly OperationRecord[]): boolean => same([...records].sort(order), [...state.records.values()].sort(order));

const fingerprintOf = (state: State): string =>
  JSON.stringify([[...state.records].sort(([a], [b]) => a.localeCompare(b)), [...state.claims].sort(([a], [b]) => a.localeCompare(b))]);

/**
 * The states that explain what `calls` (run in some serial order) answered and left behind;
 * `orders` lists the serial orders to try.
 */
export function explain(
  model: JournalModel,
  ops: readonly Op[],
  orders: readonly number[][],
  answers: readonly unknown[],
  records: readonly OperationRecord[],
): State[] {
  const next = new Map<string, State>();
  for (const state of model.states) {
    for (const serial of orders) {
      const candidate = cloneState(state);
      if (serial.every((i) => same(applyOp(candidate, ops[i] as Op), answers[i])) && sameRecords(candidate, records)) {
        next.set(fingerprintOf(candidate), candidate);
      }
    }
  }
  return [...next.values()];
}

/** PROTOCOL.md's rule for reusing a key, written out here rather than imported from the code under test. */
const replaces = (existing: OperationRecord, operation: NewOperation): boolean =>
  existing.state === 'failed' &&
  existing.fingerprint !== operation.fingerprint &&
  (existing.attempts === 0 || existing.lastStatus === 400 || existing.lastStatus === 413);

function putOne(model: State, operation: NewOperation): { created: boolean; record: OperationRecord } {
  const existing = model.records.get(id(operation.scope, operation.key));
  if (existing && !replaces(existing, operation)) return { created: false, record: existing };
  const record: OperationRecord = {
    scope: operation.scope,
    key: operation.key,
    method: operation.method,
    url: operation.url,
    headers: { ...operation.headers },
    body: operation.body,
    fingerprint: operation.fingerprint,
    state: 'pending',
    createdAt: operation.createdAt ?? model.now,
    updatedAt: model.now,
    submittedAt: operation.submitted === true ? model.now : null,
    attempts: 0,
    lastStatus: null,
    result: null,
  };
  model.records.set(id(record.scope, record.key), record);
  model.claims.delete(id(record.scope, record.key));
  return { created: true, record };
}

/** One call on a journal. */
export type Op =
  | { readonly kind: 'put'; readonly operation: NewOperation }
  | { readonly kind: 'putMany'; readonly operations: readonly NewOperation[] }
  | { readonly kind: 'get'; readonly scope: string; readonly key: string }
  | { readonly kind: 'update'; readonly scope: string; readonly key: string; readonly patch: OperationPatch }
  | { readonly kind: 'claim'; readonly scope: string; readonly key: string; readonly owner: string; readonly ttlMs: number }
  | { readonly kind: 'release'; readonly scope: string; readonly key: string; readonly owner: string }
  | { readonly kind: 'prune'; readonly olderThanMs: number };

export function applyOp(model: State, op: Op): unknown {
  switch (op.kind) {
    case 'put':
      return putOne(model, op.operation);
    case 'putMany':
      return op.operations.map((operation) => putOne(model, operation));
    case 'get':
      return model.records.get(id(op.scope, op.key));
    case 'update': {
      const current = model.records.get(id(op.scope, op.key));
      if (!current) return undefined;
      const next: OperationRecord = { ...current, ...op.patch, updatedAt: Math.max(model.now, current.updatedAt) };
      model.records.set(id(op.scope, op.key), next);
      // Settling clears the claim: a settled operation is never resumed.
      if (next.state !== 'pending') model.claims.delete(id(op.scope, op.key));
      return next;
    }
    case 'claim': {
      const record = model.records.get(id(op.scope, op.key));
      if (!record || record.state !== 'pending') return false;
      const held = model.claims.get(id(op.scope, op.key));
      if (held && held.owner !== op.owner && held.until > model.now) return false;
      model.claims.set(id(op.scope, op.key), { owner: op.owner, until: model.now + op.ttlMs });
      return true;
    }
    case 'release':
      if (model.claims.get(id(op.scope, op.key))?.owner === op.owner) model.claims.delete(id(op.scope, op.key));
      return undefined;
    case 'prune': {
      let removed = 0;
      for (const [name, record] of model.records) {
        if (record.state !== 'pending' && record.updatedAt < model.now - op.olderThanMs) {
          model.records.delete(name);
          model.claims.delete(name);
          removed += 1;
        }
      }
      return removed;
    }
  }
}

export function runOp(journal: Journal, op: Op): Promise<unknown> {
  switch (op.kind) {
    case 'put':
      return journal.put(op.operation);
    case 'putMany':
      return journal.putMany(op.operations);
    case 'get':
      return journal.get(op.scope, op.key);
    case 'update':
      return journal.update(op.scope, op.key, op.patch);
    case 'claim':
      return journal.claim(op.scope, op.key, op.owner, op.ttlMs);
    case 'release':
      return journal.release(op.scope, op.key, op.owner);
    case 'prune':
      return journal.prune(op.olderThanMs);
  }
}

/** The journal's records, checked to come oldest `createdAt` first. */
export async function recordsOf(journal: Journal): Promise<OperationRecord[]> {
  const all = await journal.list();
  for (let i = 1; i < all.length; i += 1) expect((all[i] as OperationRecord).createdAt).toBeGreaterThanOrEqual((all[i - 1] as OperationRecord).createdAt);
  return all;
}

/** Where every run's clock starts. */
export const START = Date.UTC(2026, 11, 6, 9, 0, 0);

/**
 * Runs `commands` on a fresh journal from `open`, with `Date` faked from {@link START}; closes the
 * journal and restores the clock whatever happens.
 */
export async function runJournalModel(
  open: () => Journal | Promise<Journal>,
  commands: Iterable<fc.AsyncCommand<JournalModel, Journal>>,
  cleanup?: () => Promise<void> | void,
): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(START);
  const journal = await open();
  try {
    await fc.asyncModelRun(() => ({ model: { states: [{ now: START, records: new Map(), claims: new Map() }] }, real: journal }), commands);
  } finally {
    await journal.close();
    vi.useRealTimers();
    await cleanup?.();
  }
}

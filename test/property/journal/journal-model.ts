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
 * No Node built-ins here: the browser suite imports this file.
 *
 * @module
 */
import fc from 'fast-check';
import { expect, vi } from 'vitest';
import type { Journal, ListFilter, NewOperation, OperationPatch, OperationRecord, StoredResult } from '../../../src/journal/types.js';

export const HOUR = 3_600_000;
const SCOPES = ['https://shop.test', 'https://shop.test#payroll'] as const;
const KEYS = ['k0', 'k1', 'k2'] as const;
const OWNERS = ['tab-a', 'tab-b', 'tab-c'] as const;
const STATES = ['pending', 'succeeded', 'failed'] as const;

/** One state of the journal: records by `scope key` (no key holds a space), claims likewise, and the clock. */
interface State {
  now: number;
  records: Map<string, OperationRecord>;
  claims: Map<string, { readonly owner: string; readonly until: number }>;
}

/** The model: every state the journal may be in after the calls so far (see the module comment). */
export interface JournalModel {
  states: State[];
}

const id = (scope: string, key: string): string => `${scope} ${key}`;

function cloneState(state: State): State {
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

const order = (a: OperationRecord, b: OperationRecord): number => a.createdAt - b.createdAt || id(a.scope, a.key).localeCompare(id(b.scope, b.key));

/** The journal's records are the state's (in any order among equal createdAt). */
const sameRecords = (state: State, records: readonly OperationRecord[]): boolean => same([...records].sort(order), [...state.records.values()].sort(order));

const fingerprintOf = (state: State): string =>
  JSON.stringify([[...state.records].sort(([a], [b]) => a.localeCompare(b)), [...state.claims].sort(([a], [b]) => a.localeCompare(b))]);

/**
 * The states that explain what `calls` (run in some serial order) answered and left behind;
 * `orders` lists the serial orders to try.
 */
function explain(model: JournalModel, ops: readonly Op[], orders: readonly number[][], answers: readonly unknown[], records: readonly OperationRecord[]): State[] {
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

function applyOp(model: State, op: Op): unknown {
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

function runOp(journal: Journal, op: Op): Promise<unknown> {
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
async function recordsOf(journal: Journal): Promise<OperationRecord[]> {
  const all = await journal.list();
  for (let i = 1; i < all.length; i += 1) expect((all[i] as OperationRecord).createdAt).toBeGreaterThanOrEqual((all[i - 1] as OperationRecord).createdAt);
  return all;
}

/** `list` with a filter: the model's records of that scope and state, oldest first, at most `limit`. */
class ListCommand implements fc.AsyncCommand<JournalModel, Journal> {
  constructor(readonly filter: ListFilter) {}
  check(): boolean {
    return true;
  }
  async run(model: JournalModel, journal: Journal): Promise<void> {
    const listed = await journal.list(this.filter);
    // Every state the model keeps has the same records (they were checked after each call).
    const wanted = [...(model.states[0] as State).records.values()]
      .filter((record) => this.filter.scope === undefined || record.scope === this.filter.scope)
      .filter((record) => this.filter.state === undefined || record.state === this.filter.state)
      .sort((a, b) => a.createdAt - b.createdAt);
    expect(listed.length).toBe(Math.min(wanted.length, this.filter.limit ?? Infinity));
    for (const record of listed) expect(wanted).toContainEqual(record);
    // A limit keeps the oldest: nothing older than the last one listed is left out.
    const last = listed[listed.length - 1];
    if (last) for (const record of wanted.filter((r) => r.createdAt < last.createdAt)) expect(listed).toContainEqual(record);
  }
  toString(): string {
    return `list(${JSON.stringify(this.filter)})`;
  }
}

class OpCommand implements fc.AsyncCommand<JournalModel, Journal> {
  constructor(readonly op: Op) {}
  check(): boolean {
    return true;
  }
  async run(model: JournalModel, journal: Journal): Promise<void> {
    const answer = await runOp(journal, this.op);
    const records = await recordsOf(journal);
    const states = explain(model, [this.op], [[0]], [answer], records);
    if (states.length === 0) {
      // Show the difference against the first state the model had.
      const expected = cloneState(model.states[0] as State);
      expect(answer, this.toString()).toEqual(applyOp(expected, this.op));
      expect([...records].sort(order), 'records').toEqual([...expected.records.values()].sort(order));
      throw new Error(`${this.toString()}: no state of the model explains the answer ${JSON.stringify(answer)}`);
    }
    model.states = states;
  }
  toString(): string {
    return JSON.stringify(this.op);
  }
}

function* permutations(n: number): Generator<number[]> {
  if (n === 0) {
    yield [];
    return;
  }
  for (const rest of permutations(n - 1)) for (let at = 0; at <= rest.length; at += 1) yield [...rest.slice(0, at), n - 1, ...rest.slice(at)];
}

/**
 * Calls on one record started together (two tabs claiming one operation, one settling it while
 * another claims), in the order `scheduler` releases them; passes when a serial order explains
 * every answer and the records left, and the model takes that order.
 */
class ConcurrentCommand implements fc.AsyncCommand<JournalModel, Journal> {
  constructor(
    readonly ops: readonly Op[],
    readonly scheduler: fc.Scheduler,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: JournalModel, journal: Journal): Promise<void> {
    const running = this.ops.map((op, i) => this.scheduler.schedule(Promise.resolve(i), JSON.stringify(op)).then(() => runOp(journal, op)));
    await this.scheduler.waitAll();
    const answers = await Promise.all(running);
    const records = await recordsOf(journal);
    const states = explain(model, this.ops, [...permutations(this.ops.length)], answers, records);
    if (states.length === 0) {
      throw new Error(`no serial order of ${this.toString()} explains the answers ${JSON.stringify(answers)} and the records ${JSON.stringify(records)}`);
    }
    model.states = states;
  }
  toString(): string {
    return `concurrently(${this.ops.map((op) => JSON.stringify(op)).join(', ')}) ${this.scheduler.toString()}`;
  }
}

/** Moves the (faked) wall clock on, for the model and the journal alike. */
class AdvanceCommand implements fc.AsyncCommand<JournalModel, Journal> {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true;
  }
  async run(model: JournalModel): Promise<void> {
    for (const state of model.states) state.now += this.ms;
    vi.setSystemTime((model.states[0] as State).now);
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

const result = (status: number): StoredResult => ({ status, headers: { 'content-type': 'application/json' }, body: `{"status":${status},"note":"Zürich 💶"}`, replayed: false });

/**
 * The commands of a run. `ttls`: the claim lengths calls ask for (a backend whose claims are
 * also held by a real timer gets only lengths no run outlasts, or 0).
 */
export function journalCommands(ttls: readonly number[]): Array<fc.Arbitrary<fc.AsyncCommand<JournalModel, Journal>>> {
  const scope = fc.constantFrom(...SCOPES);
  const key = fc.constantFrom(...KEYS);
  const owner = fc.constantFrom(...OWNERS);
  const operation = (s: fc.Arbitrary<string>, k: fc.Arbitrary<string>): fc.Arbitrary<NewOperation> =>
    fc
      .record({
        scope: s,
        key: k,
        fingerprint: fc.constantFrom('sha256:1', 'sha256:2'),
        body: fc.constantFrom('{"amount":1250,"note":"Zürich 💶"}', null),
        submitted: fc.boolean(),
        // An explicit createdAt (an operation journaled earlier), or the journal's clock.
        createdAt: fc.option(fc.integer({ min: -HOUR, max: 0 }), { nil: undefined }),
      })
      .map(({ scope: sc, key: ky, fingerprint, body, submitted, createdAt }) => ({
        scope: sc,
        key: ky,
        method: 'POST',
        url: `${sc.split('#')[0]}/v1/payments`,
        headers: { 'content-type': 'application/json' },
        body,
        fingerprint,
        submitted,
        // Relative to the clock's start, set when the run begins (see START).
        ...(createdAt === undefined ? {} : { createdAt: START + createdAt }),
      }));
  const patch: fc.Arbitrary<OperationPatch> = fc.record(
    {
      state: fc.constantFrom(...STATES),
      attempts: fc.nat({ max: 3 }),
      lastStatus: fc.constantFrom(null, 201, 400, 409, 413, 503),
      result: fc.option(fc.constantFrom(201, 400, 402).map(result), { nil: null }),
      submittedAt: fc.constant(START),
    },
    { requiredKeys: [] },
  );
  const ttl = fc.constantFrom(...ttls);
  const opOn = (s: fc.Arbitrary<string>, k: fc.Arbitrary<string>): fc.Arbitrary<Op> =>
    fc.oneof(
      { weight: 3, arbitrary: operation(s, k).map((o): Op => ({ kind: 'put', operation: o })) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('update' as const), scope: s, key: k, patch }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('claim' as const), scope: s, key: k, owner, ttlMs: ttl }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), scope: s, key: k, owner }) },
      fc.record({ kind: fc.constant('get' as const), scope: s, key: k }),
    );
  const single = fc.oneof(
    { weight: 12, arbitrary: opOn(scope, key) },
    { weight: 2, arbitrary: fc.array(operation(scope, key), { minLength: 1, maxLength: 3 }).map((operations): Op => ({ kind: 'putMany', operations })) },
    fc.record({ kind: fc.constant('prune' as const), olderThanMs: fc.constantFrom(0, 1_000, HOUR) }),
  );
  const concurrent = fc
    .tuple(scope, key)
    .chain(([s, k]) => fc.tuple(fc.array(opOn(fc.constant(s), fc.constant(k)), { minLength: 2, maxLength: 3 }), fc.scheduler()))
    .map(([ops, scheduler]) => new ConcurrentCommand(ops, scheduler));
  const filter: fc.Arbitrary<ListFilter> = fc.record(
    { scope, state: fc.constantFrom(...STATES), limit: fc.integer({ min: 1, max: 3 }) },
    { requiredKeys: [] },
  );
  return [
    fc.oneof(
      { weight: 10, arbitrary: single.map((op): fc.AsyncCommand<JournalModel, Journal> => new OpCommand(op)) },
      { weight: 4, arbitrary: concurrent },
      { weight: 1, arbitrary: filter.map((f): fc.AsyncCommand<JournalModel, Journal> => new ListCommand(f)) },
      { weight: 2, arbitrary: fc.constantFrom(1, 999, 1_000, HOUR).map((ms): fc.AsyncCommand<JournalModel, Journal> => new AdvanceCommand(ms)) },
    ),
  ];
}

/** Where every run's clock starts. */
export const START = Date.UTC(2026, 11, 6, 9, 0, 0);

/**
 * Runs `commands` on a fresh journal from `open`, with `Date` faked from {@link START}; closes the
 * journal and restores the clock whatever happens.
 */
export async function runJournalModel(open: () => Journal | Promise<Journal>, commands: Iterable<fc.AsyncCommand<JournalModel, Journal>>, cleanup?: () => Promise<void> | void): Promise<void> {
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

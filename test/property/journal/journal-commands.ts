/**
 * The commands of the journal model-based runs (see ./journal-model.ts): one call at a time, 2-3
 * calls racing on one record in an order fast-check's scheduler picks, filtered lists, and the
 * clock moved on. No Node built-ins: the browser suite imports this file.
 *
 * @module
 */
import fc from 'fast-check';
import { expect, vi } from 'vitest';
import type { Journal, ListFilter, NewOperation, OperationPatch, StoredResult } from '../../../src/journal/types.js';
import { HOUR, START, applyOp, cloneState, explain, order, recordsOf, runOp, type JournalModel, type Op, type State } from './journal-model.js';

const SCOPES = ['https://shop.test', 'https://shop.test#payroll'] as const;
const KEYS = ['k0', 'k1', 'k2'] as const;
const OWNERS = ['tab-a', 'tab-b', 'tab-c'] as const;
const STATES = ['pending', 'succeeded', 'failed'] as const;

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

const result = (status: number): StoredResult => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: `{"status":${status},"note":"Zürich 💶"}`,
  replayed: false,
});

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
  const filter: fc.Arbitrary<ListFilter> = fc.record({ scope, state: fc.constantFrom(...STATES), limit: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: [] });
  return [
    fc.oneof(
      { weight: 10, arbitrary: single.map((op): fc.AsyncCommand<JournalModel, Journal> => new OpCommand(op)) },
      { weight: 4, arbitrary: concurrent },
      { weight: 1, arbitrary: filter.map((f): fc.AsyncCommand<JournalModel, Journal> => new ListCommand(f)) },
      { weight: 2, arbitrary: fc.constantFrom(1, 999, 1_000, HOUR).map((ms): fc.AsyncCommand<JournalModel, Journal> => new AdvanceCommand(ms)) },
    ),
  ];
}

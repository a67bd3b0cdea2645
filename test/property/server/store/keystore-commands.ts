/**
 * The commands of the KeyStore model-based runs (see ./keystore-model.ts): one call at a time,
 * 2-3 calls racing on one key in an order fast-check's scheduler picks, the clock moved on, the
 * recovery worker's sweep and the reaper.
 *
 * @module
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import {
  HASHES,
  HOUR,
  KEYS,
  POINTS,
  applyOp,
  cloneModel,
  expectSameState,
  hasLease,
  runOp,
  type Answer,
  type Op,
  type RealStore,
  type StoreModel,
  type Work,
} from './keystore-model.js';

const describeOp = (op: Op): string => JSON.stringify(op);

/** `op` with its lease picked among the `count` handed out so far (a stale one as often as not). */
const resolve = (op: Op, count: number): Op => ('lease' in op ? { ...op, lease: op.lease % count } : op);
const needsLease = (op: Op): boolean => 'lease' in op;

/** One call, on its own. */
class OpCommand implements fc.AsyncCommand<StoreModel, RealStore> {
  private ran: Op | undefined;
  constructor(readonly op: Op) {}
  check(model: Readonly<StoreModel>): boolean {
    return !needsLease(this.op) || model.leaseKeys.length > 0;
  }
  async run(model: StoreModel, real: RealStore): Promise<void> {
    const op = (this.ran = resolve(this.op, real.leases.length));
    const { answer, lease } = await runOp(real, op);
    const expected = applyOp(model, op, real.leases.length);
    expect(answer, describeOp(op)).toEqual(expected);
    if (lease) real.leases.push(lease);
    await expectSameState(model, real);
  }
  toString(): string {
    return describeOp(this.ran ?? this.op);
  }
}

function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items];
    return;
  }
  for (let i = 0; i < items.length; i += 1) {
    for (const rest of permutations([...items.slice(0, i), ...items.slice(i + 1)])) yield [items[i] as T, ...rest];
  }
}

/**
 * Several calls started together, in the order `scheduler` releases them, all running at once on
 * the store. Passes when a serial order of the calls gives, on the model, every answer the store
 * gave and the state it left; the model then takes that order.
 */
class ConcurrentCommand implements fc.AsyncCommand<StoreModel, RealStore> {
  private ops: readonly Op[];
  constructor(
    ops: readonly Op[],
    readonly scheduler: fc.Scheduler,
  ) {
    this.ops = ops;
  }
  check(model: Readonly<StoreModel>): boolean {
    return !this.ops.some(needsLease) || model.leaseKeys.length > 0;
  }
  async run(model: StoreModel, real: RealStore): Promise<void> {
    this.ops = this.ops.map((op) => resolve(op, real.leases.length));
    const running = this.ops.map((op, i) => this.scheduler.schedule(Promise.resolve(i), describeOp(op)).then(() => runOp(real, op)));
    await this.scheduler.waitAll();
    const results = await Promise.all(running);
    // The leases handed out take ids in call order, as they are pushed below.
    const ids: number[] = [];
    let next = real.leases.length;
    for (const result of results) ids.push(result.lease ? next++ : -1);
    for (const result of results) if (result.lease) real.leases.push(result.lease);
    const tried: string[] = [];
    for (const order of permutations(this.ops.map((_, i) => i))) {
      const candidate = cloneModel(model);
      const explains = order.every((i) => {
        const answer = applyOp(candidate, this.ops[i] as Op, ids[i] === -1 ? next : (ids[i] as number));
        return JSON.stringify(answer) === JSON.stringify((results[i] as { answer: Answer }).answer) && hasLease(answer) === (ids[i] !== -1);
      });
      if (!explains) continue;
      try {
        await expectSameState(candidate, real);
      } catch (error) {
        tried.push(`${order.join(',')}: ${(error as Error).message}`);
        continue;
      }
      Object.assign(model, candidate);
      return;
    }
    throw new Error(
      `no serial order of ${this.toString()} explains what the store did: answers ${JSON.stringify(results.map((r) => r.answer))}` +
        (tried.length > 0 ? `; orders with those answers left another state: ${tried.join(' | ')}` : ''),
    );
  }
  toString(): string {
    return `concurrently(${this.ops.map(describeOp).join(', ')}) ${this.scheduler.toString()}`;
  }
}

/** Moves the model's and the store's clock on. */
class AdvanceCommand implements fc.AsyncCommand<StoreModel, RealStore> {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true;
  }
  async run(model: StoreModel, real: RealStore): Promise<void> {
    model.clock += this.ms;
    (real.clock as { now: number }).now += this.ms;
    await expectSameState(model, real);
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

/** The recovery worker's sweep: started rows with no live lease that are due. */
class SweepCommand implements fc.AsyncCommand<StoreModel, RealStore> {
  check(): boolean {
    return true;
  }
  async run(model: StoreModel, real: RealStore): Promise<void> {
    const swept = (await real.store.sweep!(100)).filter((row) => row.clientId === real.clientId).map((row) => row.key);
    const due = [...model.rows]
      .filter(([, row]) => row.state === 'started' && row.nextAttemptAt <= model.clock && (row.lease === null || row.lease.until <= model.clock))
      .map(([key]) => key);
    expect(swept.sort(), 'swept keys').toEqual(due.sort());
  }
  toString(): string {
    return 'sweep';
  }
}

/** The reaper: finished rows past their expiry go; nothing else does. */
class ReapCommand implements fc.AsyncCommand<StoreModel, RealStore> {
  check(): boolean {
    return true;
  }
  async run(model: StoreModel, real: RealStore): Promise<void> {
    const removed = await real.store.reap!(100);
    const expired = [...model.rows].filter(([, row]) => row.state === 'finished' && row.expiresAt <= model.clock).map(([key]) => key);
    for (const key of expired) model.rows.delete(key);
    expect(removed, 'reaped rows').toBe(expired.length);
    await expectSameState(model, real);
  }
  toString(): string {
    return 'reap';
  }
}

/**
 * The commands of a run. `durations` are the lease, retention and retry times calls may ask for;
 * `clocked` adds the command that moves the clock (a store with an injectable clock only).
 */
export function storeCommands(durations: readonly number[], clocked: boolean): Array<fc.Arbitrary<fc.AsyncCommand<StoreModel, RealStore>>> {
  const key = fc.constantFrom(...KEYS);
  const duration = fc.constantFrom(...durations);
  const lease = fc.nat({ max: 11 });
  const work = fc.constantFrom<Work>('none', 'insert', 'throw');
  const data = fc.dictionary(fc.constantFrom('risk', 'charge', 'note'), fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom('ok', 'ch_1', 'é')), {
    maxKeys: 2,
  });
  const admit = fc.record({ kind: fc.constant('admit' as const), key, hash: fc.constantFrom(...HASHES), leaseMs: duration, ttlMs: duration });
  const takeOver = fc.record({ kind: fc.constant('takeOver' as const), key, leaseMs: duration });
  const commit = fc.record({ kind: fc.constant('commit' as const), lease, point: fc.constantFrom(...POINTS), data, leaseMs: duration, work });
  const finish = fc.record({ kind: fc.constant('finish' as const), lease, status: fc.constantFrom(201, 402, 409), work });
  const release = fc.record({ kind: fc.constant('release' as const), lease, forget: fc.boolean() });
  const park = fc.record({ kind: fc.constant('park' as const), lease, retryAfterMs: duration });
  // Calls racing on one key. New leases are an hour long: a lease over by the next statement could
  // be seen as live by a transaction that started before it was written, which no serial order has.
  const racing = (k: string): fc.Arbitrary<Op> =>
    fc.oneof(
      // Admissions weigh most: of any number at once, exactly one may own a new row.
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('admit' as const),
          key: fc.constant(k),
          hash: fc.constantFrom(...HASHES),
          leaseMs: fc.constant(HOUR),
          ttlMs: duration,
        }),
      },
      fc.record({ kind: fc.constant('takeOver' as const), key: fc.constant(k), leaseMs: fc.constant(HOUR) }),
      fc.record({ kind: fc.constant('commit' as const), lease, point: fc.constantFrom(...POINTS), data, leaseMs: fc.constant(HOUR), work }),
      finish,
      release,
      park,
    );
  const concurrent = key
    .chain((k) => fc.tuple(fc.array(racing(k), { minLength: 2, maxLength: 3 }), fc.scheduler()))
    .map(([ops, scheduler]) => new ConcurrentCommand(ops, scheduler));
  const single = fc.oneof({ weight: 3, arbitrary: admit }, takeOver, { weight: 3, arbitrary: commit }, { weight: 2, arbitrary: finish }, release, park);
  // One arbitrary with weights: fc.commands picks among its arbitraries evenly.
  return [
    fc.oneof(
      { weight: 12, arbitrary: single.map((op): fc.AsyncCommand<StoreModel, RealStore> => new OpCommand(op)) },
      { weight: 4, arbitrary: concurrent },
      { weight: 1, arbitrary: fc.constant(new SweepCommand()) },
      { weight: 1, arbitrary: fc.constant(new ReapCommand()) },
      ...(clocked
        ? [{ weight: 2, arbitrary: fc.constantFrom(1, 50, 100, 1_000, HOUR).map((ms): fc.AsyncCommand<StoreModel, RealStore> => new AdvanceCommand(ms)) }]
        : []),
    ),
  ];
}

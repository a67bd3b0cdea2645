/**
 * Background loops: the recovery worker (resumes started rows whose owner is gone) and the
 * reaper (deletes finished keys past their retention window).
 *
 * Both are safe to run in every server process at once: the worker's takeover is the store's
 * conditional UPDATE, so two workers (or a worker and a client retry) never run one row together.
 *
 * @module
 */
import type { IdempotencyHandler, RecoveryOutcome } from './handler.js';
import type { ServerMetrics } from './metrics.js';
import type { KeyStore } from './store/types.js';

/**
 * A loop with an explicit single pass for tests.
 *
 * @example
 * ```ts
 * const pass = await worker.runOnce(); // { finished: 1, pending: 0, ... }
 * ```
 */
export interface BackgroundLoop<Result> {
  /** Starts running a pass every interval (the first after one interval). Idempotent. */
  start(): void;
  /** Stops the loop and waits for a pass in progress to end. */
  stop(): Promise<void>;
  /** Runs one pass now (serialised with the timer's passes). */
  runOnce(): Promise<Result>;
  /**
   * Why this loop cannot run: its store lacks the optional member it needs (`sweep` for the
   * recovery worker, `reap` for the reaper). `start()` then does nothing and `runOnce()` rejects
   * with this reason; `undefined` when the loop can run.
   */
  readonly unsupported: string | undefined;
}

/** Options of {@link createRecoveryWorker}. */
export interface RecoveryWorkerOptions {
  readonly store: KeyStore;
  /** The handler whose operations the rows belong to. */
  readonly handler: IdempotencyHandler;
  /**
   * Time between sweeps.
   * @default 1000
   */
  readonly intervalMs?: number;
  /**
   * Rows resumed per sweep, one after another.
   * @default 50
   */
  readonly batchSize?: number;
}

/** What one recovery pass did, by outcome. */
export type RecoveryPass = Readonly<Record<RecoveryOutcome, number>>;

/** Options of {@link createReaper}. */
export interface ReaperOptions {
  readonly store: KeyStore;
  /** Counts `keys_reaped`; usually the handler's metrics. */
  readonly metrics?: ServerMetrics;
  /**
   * Time between passes.
   * @default 60000
   */
  readonly intervalMs?: number;
  /**
   * Rows deleted per statement; a pass repeats batches until one comes back short.
   * @default 500
   */
  readonly batchSize?: number;
  /**
   * Batches per pass at most, so one pass never holds the write lock for long in total.
   * @default 100
   */
  readonly maxBatches?: number;
}

/** A loop that cannot run on its store: says why, and never starts. */
function unsupportedLoop<Result>(reason: string): BackgroundLoop<Result> {
  return { start: () => undefined, stop: async () => undefined, runOnce: () => Promise.reject(new Error(reason)), unsupported: reason };
}

function createLoop<Result>(intervalMs: number, pass: () => Promise<Result>): BackgroundLoop<Result> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let current: Promise<unknown> = Promise.resolve();
  const runOnce = (): Promise<Result> => {
    const next = current.then(pass, pass);
    current = next.catch(() => undefined);
    return next;
  };
  const schedule = (): void => {
    timer = setTimeout(() => {
      // A failed pass (store down) is retried at the next tick; the rows stay where they were.
      void runOnce()
        .catch(() => undefined)
        .then(() => {
          if (running) schedule();
        });
    }, intervalMs);
    timer.unref?.();
  };
  return {
    start() {
      if (running) return;
      running = true;
      schedule();
    },
    async stop() {
      running = false;
      if (timer !== undefined) clearTimeout(timer);
      await current;
    },
    runOnce,
    unsupported: undefined,
  };
}

/**
 * Creates the recovery worker: each pass sweeps started rows with no live lease that are due
 * (parked rows wait out their backoff), takes each over and resumes it from its recovery point.
 * Over a store without `sweep` the loop cannot run: it says why in `unsupported` and never starts.
 *
 * @example
 * ```ts
 * const worker = createRecoveryWorker({ store, handler, intervalMs: 1000 });
 * worker.start();
 * // on shutdown
 * await worker.stop();
 * ```
 */
export function createRecoveryWorker(options: RecoveryWorkerOptions): BackgroundLoop<RecoveryPass> {
  const { store, handler } = options;
  const batchSize = options.batchSize ?? 50;
  const sweep = store.sweep?.bind(store);
  if (!sweep) return unsupportedLoop('the key store has no sweep(): no recovery worker; a stuck key resumes only when its client retries');
  return createLoop(options.intervalMs ?? 1000, async () => {
    const pass: Record<RecoveryOutcome, number> = { finished: 0, pending: 0, transient: 0, lost: 0, busy: 0, unresumable: 0 };
    for (const row of await sweep(batchSize)) {
      const outcome = await handler.resume(row);
      pass[outcome] += 1;
      if (outcome === 'finished') handler.metrics.add('recoveries');
    }
    return pass;
  });
}

/**
 * Creates the reaper: each pass deletes finished keys past their retention window in batches
 * (short write transactions, so requests are never blocked behind one huge DELETE). Over a store
 * without `reap` the loop cannot run: it says why in `unsupported` and never starts.
 *
 * @example
 * ```ts
 * const reaper = createReaper({ store, metrics: handler.metrics, intervalMs: 60_000 });
 * reaper.start();
 * const removed = await reaper.runOnce();
 * ```
 */
export function createReaper(options: ReaperOptions): BackgroundLoop<number> {
  const { store, metrics } = options;
  const batchSize = options.batchSize ?? 500;
  const maxBatches = options.maxBatches ?? 100;
  const reap = store.reap?.bind(store);
  if (!reap) return unsupportedLoop('the key store has no reap(): no reaper; finished keys stay until deleted by hand');
  return createLoop(options.intervalMs ?? 60_000, async () => {
    let removed = 0;
    for (let batch = 0; batch < maxBatches; batch += 1) {
      const n = await reap(batchSize);
      removed += n;
      metrics?.add('keys_reaped', n);
      if (n < batchSize) break;
    }
    return removed;
  });
}

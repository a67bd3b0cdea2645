/**
 * A guarded request run inside the transaction that stores its response (`transaction: true`):
 * what the handler writes through `tx` commits together with the key, or not at all.
 *
 * The store's `finish` owns the transaction and calls its work with `tx`; the handler runs
 * outside that call, in the framework. So the work waits for the handler's response:
 *
 * ```
 * open()      finish(lease, work) ──► work(tx): the transaction is open ──► open() resolves: the handler runs with tx
 * complete(r) ──► handed to the waiting work: final ─► returned, stored, committed
 *                                             not final (5xx, 429, …) ─► rolled back, key released
 * abort(e) / leaseMs passes first ──► the work throws ─► rolled back, key released
 * ```
 *
 * Past its lease the handler is fenced out (its `tx` refuses every statement), as when another
 * request took the key over: a handler that never answers must not hold the store's lock.
 *
 * @module
 * @internal
 */
import type { WireResponse } from '../answers.js';
import { LeaseLostError } from '../store/lease-lost.js';
import type { StoredResponse, Tx } from '../store/types.js';
import type { LeasedRun } from './leased-run.js';
import type { Decision, Execution, GuardContext } from './types.js';
import { captureStored, isFinalStatus } from './wire.js';

/** A promise with its resolver; resolving it again does nothing. */
interface Deferred<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

/**
 * The work's way to roll the transaction back for a response that is not final: the store
 * contract rolls back a work that throws. Never leaves this module.
 */
class NotFinal extends Error {
  override readonly name = 'NotFinal';
}

/** How `finish` ended: it returned (`ok: false` when the lease was lost), or it threw. */
type Finished = { readonly ok: boolean } | { readonly error: unknown };

/** A `tx` whose statements are refused once {@link FencedTx.close} is called. */
class FencedTx implements Tx {
  private closed = false;
  readonly dialect: Tx['dialect'];

  constructor(private readonly tx: Tx) {
    this.dialect = tx.dialect;
  }

  close(): void {
    this.closed = true;
  }

  run(sql: string, params?: readonly unknown[]): Promise<number> {
    return this.closed ? Promise.reject(new LeaseLostError()) : this.tx.run(sql, params);
  }

  all<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    return this.closed ? Promise.reject(new LeaseLostError()) : this.tx.all<T>(sql, params);
  }

  get<T extends object = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined> {
    return this.closed ? Promise.reject(new LeaseLostError()) : this.tx.get<T>(sql, params);
  }
}

/** See the module comment. */
export class TransactionExecution implements Execution {
  readonly context: GuardContext;
  private readonly timer: ReturnType<typeof setTimeout>;

  private constructor(
    private readonly run: LeasedRun,
    tx: FencedTx,
    /** The handler's response (or why there is none), awaited by the work inside the transaction. */
    private readonly answered: Deferred<WireResponse | Error>,
    private readonly finished: Promise<Finished>,
    leaseMs: number,
  ) {
    this.context = run.context(tx);
    this.timer = setTimeout(() => {
      tx.close();
      answered.resolve(new LeaseLostError());
    }, leaseMs);
  }

  /** Opens the transaction: the execution once it is open, or the answer when it never opened. */
  static async open(run: LeasedRun, leaseMs: number, maxResponseBytes: number): Promise<Decision> {
    const opened = deferred<Tx>();
    const answered = deferred<WireResponse | Error>();
    const work = async (tx: Tx): Promise<StoredResponse> => {
      opened.resolve(tx);
      const response = await answered.promise;
      if (response instanceof Error) throw response;
      if (!isFinalStatus(response.status)) throw new NotFinal('not a final response');
      return captureStored(response, maxResponseBytes);
    };
    const finished: Promise<Finished> = run.store
      .finish(run.lease, (stored: StoredResponse | undefined) => stored!, work)
      .then(
        (done) => ({ ok: done.ok }),
        (error: unknown) => ({ error }),
      );
    const first = await Promise.race([opened.promise, finished]);
    if ('run' in first) {
      const execution = new TransactionExecution(run, new FencedTx(first), answered, finished, leaseMs);
      return { kind: 'run', execution };
    }
    // Nothing ran: the lease was lost, or the store failed, before the transaction opened.
    if ('ok' in first) {
      run.end();
      return { kind: 'answer', response: run.lost() };
    }
    run.report(first.error);
    await run.release().finally(run.end);
    return { kind: 'answer', response: run.unavailable() };
  }

  async complete(response: WireResponse): Promise<WireResponse> {
    this.hand(response);
    return (await this.settle()) ?? this.run.echoed(response);
  }

  async abort(error: unknown): Promise<void> {
    this.hand(error instanceof Error ? error : new Error(String(error)));
    await this.settle();
  }

  private hand(response: WireResponse | Error): void {
    clearTimeout(this.timer);
    this.answered.resolve(response);
  }

  /** Waits for the transaction's end: `undefined` to send the handler's own response, else what to send instead. */
  private async settle(): Promise<WireResponse | undefined> {
    const run = this.run;
    try {
      const result = await this.finished;
      if ('ok' in result) return result.ok ? undefined : run.lost();
      await run.release();
      if (result.error instanceof NotFinal) return undefined;
      run.report(result.error);
      return run.unavailable();
    } finally {
      run.end();
    }
  }
}

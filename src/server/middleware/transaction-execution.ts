/**
 * A guarded request run inside the transaction that stores its response (`transaction: true`):
 * what the handler writes through `tx` commits together with the key, or not at all.
 *
 * The store owns the transaction and calls its work with `tx`; the handler runs outside that
 * call, in the framework. So the work waits for the handler's response. The transaction is begun
 * one of two ways:
 *
 * - {@link TransactionExecution.admit}, a fresh key: the store's `admit` with the whole request
 *   ({@link WholeRequest}): admission, the handler's statements and the stored response are ONE
 *   transaction and one commit. Nobody sees the key before that COMMIT: a duplicate waits for it
 *   (in this process, or in the database up to its wait), and a crash or a rollback leaves nothing.
 * - {@link TransactionExecution.open}, a key taken over from a dead owner: `finish` with the work,
 *   under the lease the takeover got.
 *
 * ```
 * begin(work) ──► work(tx): the transaction is open ──► the handler runs with tx
 * complete(r) ──► handed to the waiting work: final ─► returned, stored, committed
 *                                             not final (5xx, 429, …) ─► rolled back (a taken-over key is released)
 * abort(e) / leaseMs passes first ──► the work throws ─► rolled back
 * ```
 *
 * Past its lease the handler is fenced out (its `tx` refuses every statement), as when another
 * request took the key over: a handler that never answers must not hold the store's lock.
 *
 * @module
 * @internal
 */
import type { WireResponse } from '../answers.js';
import type { NotOwned } from '../admission.js';
import { LeaseLostError, isLeaseLost } from '../store/lease-lost.js';
import type { AdmitInput, StoredResponse, Tx } from '../store/types.js';
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

/**
 * How the store's call ended: it stored the response (`ok: true`), lost the lease (`ok: false`),
 * threw, or (an admission only) found the key held by another request.
 */
type Finished = { readonly ok: boolean } | { readonly error: unknown } | { readonly found: NotOwned };

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

/** What a transaction's work is handed and gives back. */
type Work = (tx: Tx) => Promise<StoredResponse>;

/** See the module comment. */
export class TransactionExecution implements Execution {
  readonly context: GuardContext;
  private readonly timer: ReturnType<typeof setTimeout>;

  private constructor(
    private readonly run: LeasedRun,
    private readonly tx: FencedTx,
    /** The handler's response (or why there is none), awaited by the work inside the transaction. */
    private readonly answered: Deferred<WireResponse | Error>,
    private readonly finished: Promise<Finished>,
    leaseMs: number,
    /** Whether a key left behind by a failed transaction must be given up (a taken-over row stays otherwise). */
    private readonly releases: boolean,
  ) {
    this.context = run.context(tx);
    // The transaction's end, not the handler's answer, frees the key: a handler that outlived its
    // lease must not keep the duplicates waiting in this process after its transaction rolled back.
    void finished.then(() => run.end());
    this.timer = setTimeout(() => {
      tx.close();
      answered.resolve(new LeaseLostError());
    }, leaseMs);
  }

  /**
   * Admits a fresh key with the whole request (see the module comment): the execution once the
   * key is this request's and the transaction open, or what the store found instead.
   */
  static async admit(run: LeasedRun, input: AdmitInput, leaseMs: number, maxResponseBytes: number): Promise<Decision | { readonly found: NotOwned }> {
    return TransactionExecution.begin(run, leaseMs, maxResponseBytes, false, (work) =>
      run.store.admit(input, { work, response: (stored) => stored }).then(
        (result): Finished => (result.owned ? { ok: true } : { found: result }),
        // The handler outlived its lease: the transaction rolled back and the key with it.
        (error: unknown): Finished => (isLeaseLost(error) ? { ok: false } : { error }),
      ),
    );
  }

  /** Opens the transaction of a key taken over: the execution once it is open, or the answer when it never opened. */
  static async open(run: LeasedRun, leaseMs: number, maxResponseBytes: number): Promise<Decision> {
    const decision = await TransactionExecution.begin(run, leaseMs, maxResponseBytes, true, (work) =>
      run.store
        .finish(run.lease, (stored: StoredResponse | undefined) => stored!, work)
        .then(
          (done): Finished => ({ ok: done.ok }),
          (error: unknown): Finished => ({ error }),
        ),
    );
    // `finish` finds no other owner: it answers `ok: false` instead.
    return 'found' in decision ? { kind: 'answer', response: run.lost() } : decision;
  }

  private static async begin(
    run: LeasedRun,
    leaseMs: number,
    maxResponseBytes: number,
    releases: boolean,
    start: (work: Work) => Promise<Finished>,
  ): Promise<Decision | { readonly found: NotOwned }> {
    const opened = deferred<Tx>();
    const answered = deferred<WireResponse | Error>();
    const work: Work = async (tx) => {
      opened.resolve(tx);
      const response = await answered.promise;
      if (response instanceof Error) throw response;
      if (!isFinalStatus(response.status)) throw new NotFinal('not a final response');
      return captureStored(response, maxResponseBytes);
    };
    let finished: Promise<Finished>;
    try {
      finished = start(work);
    } catch (error) {
      // A store that throws instead of rejecting: the same failure, reported and answered alike.
      finished = Promise.resolve({ error });
    }
    const first = await Promise.race([opened.promise, finished]);
    if ('run' in first) {
      const execution = new TransactionExecution(run, new FencedTx(first), answered, finished, leaseMs, releases);
      return { kind: 'run', execution };
    }
    // Nothing ran: another request holds the key, the lease was lost, or the store failed, before the transaction opened.
    if ('found' in first) return first;
    // Stored without running the work: a store that ignored the whole request (docs/key-store.md).
    if ('ok' in first && first.ok) {
      run.report(new Error('oncely: the key store admitted a whole request without running its work; it must implement WholeRequest (see docs/key-store.md)'));
      run.end();
      return { kind: 'answer', response: run.unavailable() };
    }
    if ('ok' in first) {
      run.end();
      return { kind: 'answer', response: run.lost() };
    }
    run.report(first.error);
    if (releases) await run.release().finally(run.end);
    else run.end();
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
    // The handler has answered: a statement it left unawaited belongs to no transaction now.
    this.tx.close();
    this.answered.resolve(response);
  }

  /** Waits for the transaction's end: `undefined` to send the handler's own response, else what to send instead. */
  private async settle(): Promise<WireResponse | undefined> {
    const run = this.run;
    try {
      const result = await this.finished;
      // Once the handler ran, the key was this request's: nobody else's row can be found.
      if ('found' in result) return run.unavailable();
      if ('ok' in result) return result.ok ? undefined : run.lost();
      if (this.releases) await run.release();
      if (result.error instanceof NotFinal) return undefined;
      run.report(result.error);
      return run.unavailable();
    } finally {
      run.end();
    }
  }
}

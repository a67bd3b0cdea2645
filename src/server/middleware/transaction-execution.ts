/**
 * A guarded request run inside the transaction that stores its response (`transaction: true`):
 * what the handler writes through `tx` commits together with the key, or not at all.
 *
 * A straight line over the store's whole-request handle ({@link RequestTransaction}):
 *
 * ```
 * begin ──► the handler runs with tx ──► complete(r): final ─► commit(r): stored with the handler's writes
 *                                                     not final (5xx, 429, …) ─► rollback (a taken-over key is released)
 *                                        abort(e) / the lease passes first ─► rollback
 * ```
 *
 * It begins one of two ways:
 * - {@link TransactionExecution.admit}, a fresh key: the store's `beginRequest`. Nobody sees the
 *   key before the COMMIT: a duplicate waits for it (in this process, or in the database up to
 *   its wait), and a crash or a rollback leaves nothing.
 * - {@link TransactionExecution.open}, a key taken over from a dead owner: `finish` under the
 *   lease the takeover got, its work handed over as the same handle (`requestOver`).
 *
 * Past its lease the handler is fenced out (its `tx` refuses every statement) and the transaction
 * rolled back, as when another request took the key over: a handler that never answers must not
 * hold the store's lock.
 *
 * @module
 * @internal
 */
import type { WireResponse } from '../answers.js';
import type { NotOwned } from '../admission.js';
import { LeaseLostError, isLeaseLost } from '../store/lease-lost.js';
import { beginRequestOf, requestOver } from '../store/request-transaction.js';
import type { RequestTransaction } from '../store/records.js';
import type { AdmitInput, StoredResponse, Tx } from '../store/types.js';
import type { LeasedRun } from './leased-run.js';
import type { Decision, Execution, GuardContext } from './types.js';
import { captureStored, isFinalStatus } from './wire.js';

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
  private readonly tx: FencedTx;
  private readonly timer: ReturnType<typeof setTimeout>;
  /** Set when the lease passed first: the transaction is being rolled back. */
  private expired: Promise<void> | undefined;

  private constructor(
    private readonly run: LeasedRun,
    private readonly request: RequestTransaction,
    leaseMs: number,
    private readonly maxResponseBytes: number,
    /** Whether a key left behind by a failed transaction must be given up (a taken-over row stays otherwise). */
    private readonly releases: boolean,
  ) {
    this.tx = new FencedTx(request.tx);
    this.context = run.context(this.tx);
    this.timer = setTimeout(() => {
      this.tx.close();
      // The transaction's end, not the handler's answer, frees the key for the duplicates here.
      this.expired = this.rollback().finally(() => run.end());
    }, leaseMs);
  }

  /** Admits a fresh key with the whole request: the execution once the key is this request's, or what the store found instead. */
  static async admit(run: LeasedRun, input: AdmitInput, leaseMs: number, maxResponseBytes: number): Promise<Decision | { readonly found: NotOwned }> {
    let began;
    try {
      began = await beginRequestOf(run.store)(input);
    } catch (error) {
      run.report(error);
      run.end();
      return { kind: 'answer', response: run.unavailable() };
    }
    if (!began.owned) return { found: began };
    return { kind: 'run', execution: new TransactionExecution(run, began.request, leaseMs, maxResponseBytes, false) };
  }

  /** Opens the transaction of a key taken over: the execution once it is open, or the answer when it never opened. */
  static async open(run: LeasedRun, leaseMs: number, maxResponseBytes: number): Promise<Decision> {
    let opened;
    try {
      opened = await requestOver(
        (work) => run.store.write(run.lease, { kind: 'finish', response: (stored: StoredResponse | undefined) => stored! }, work),
        (done) => done.ok,
      );
    } catch (error) {
      run.report(error);
      await run.release().finally(run.end);
      return { kind: 'answer', response: run.unavailable() };
    }
    if ('request' in opened) return { kind: 'run', execution: new TransactionExecution(run, opened.request, leaseMs, maxResponseBytes, true) };
    // `finish` found the lease gone before its work ran.
    run.end();
    return { kind: 'answer', response: run.lost() };
  }

  async complete(response: WireResponse): Promise<WireResponse> {
    if (!this.handOver()) return this.afterExpiry();
    const run = this.run;
    try {
      if (!isFinalStatus(response.status)) {
        await this.rollback();
        return run.echoed(response);
      }
      try {
        await this.request.commit(captureStored(response, this.maxResponseBytes));
      } catch (error) {
        if (isLeaseLost(error)) return run.lost();
        run.report(error);
        if (this.releases) await run.release();
        return run.unavailable();
      }
      return run.echoed(response);
    } finally {
      run.end();
    }
  }

  async abort(): Promise<void> {
    if (!this.handOver()) {
      await this.expired;
      return;
    }
    try {
      await this.rollback();
    } finally {
      this.run.end();
    }
  }

  /** Whether the handler answered within its lease: its `tx` is closed either way (a statement it left unawaited belongs to no transaction now). */
  private handOver(): boolean {
    clearTimeout(this.timer);
    this.tx.close();
    return this.expired === undefined;
  }

  /** The answer once the lease passed first: rolled back, nothing stored. */
  private async afterExpiry(): Promise<WireResponse> {
    await this.expired;
    return this.run.lost();
  }

  /** Rolls the transaction back (a failure is reported: the database ends it with the connection), and gives a taken-over key up. */
  private async rollback(): Promise<void> {
    try {
      await this.request.rollback();
    } catch (error) {
      this.run.report(error);
    }
    if (this.releases) await this.run.release();
  }
}

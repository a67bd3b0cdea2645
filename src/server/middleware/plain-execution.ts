/**
 * A guarded request run plainly: the handler runs, then its final response is stored (`finish`),
 * then it is sent. The effect and the stored response are two commits: a crash between them frees
 * the key after one lease, and a retry runs the handler again (`transaction: true` closes that gap).
 *
 * @module
 * @internal
 */
import type { WireResponse } from '../answers.js';
import { ResponseTooLargeError } from '../errors/response-too-large-error.js';
import type { Fenced } from '../store/types.js';
import type { LeasedRun } from './leased-run.js';
import type { Execution, GuardContext } from './types.js';
import { captureStored, isFinalStatus } from './wire.js';

/** See the module comment. */
export class PlainExecution implements Execution {
  readonly context: GuardContext;

  constructor(
    private readonly run: LeasedRun,
    private readonly maxResponseBytes: number,
  ) {
    this.context = run.context(undefined);
  }

  complete(response: WireResponse): Promise<WireResponse> {
    return this.storeAndSend(response).finally(this.run.end);
  }

  async abort(): Promise<void> {
    await this.run.release().finally(this.run.end);
  }

  /** Stores a final response (a non-final one releases the key) and gives what to send. */
  private async storeAndSend(response: WireResponse): Promise<WireResponse> {
    const run = this.run;
    if (!isFinalStatus(response.status)) {
      await run.release();
      return run.echoed(response);
    }
    try {
      const done = await this.finish(response);
      return done.ok ? run.echoed(response) : run.lost();
    } catch (error) {
      // The effect happened and only storing its answer failed: the caller learns the outcome.
      run.report(error);
      return run.echoed(response);
    }
  }

  private async finish(response: WireResponse): Promise<Fenced<unknown>> {
    const { store, lease } = this.run;
    try {
      return await store.write(lease, { kind: 'finish', response: captureStored(response, this.maxResponseBytes) });
    } catch (error) {
      // The store's own cap is below the guard's: the response is delivered once, as any too large.
      if (!(error instanceof ResponseTooLargeError)) throw error;
      return store.write(lease, { kind: 'finish', response: captureStored(response, -1) });
    }
  }
}

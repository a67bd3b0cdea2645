/**
 * Waiting on an operation's attempt chain: many callers may wait on one chain, each may stop
 * waiting on its own signal, and the chain stops only when the last of them has.
 *
 * @module
 */
import { OperationAbortedError, type OperationRef } from '../errors.js';
import type { OperationResult } from './results.js';

/**
 * The attempts in flight for one key in one client.
 *
 * @internal
 */
export interface Chain {
  readonly ref: OperationRef;
  readonly controller: AbortController;
  readonly promise: Promise<OperationResult>;
  waiters: number;
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts.
 *
 * @internal
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Waits for `chain` unless `signal` aborts first; the last waiter to leave stops the chain.
 *
 * @internal
 */
export function join(chain: Chain, signal: AbortSignal | undefined): Promise<OperationResult> {
  chain.waiters += 1;
  return new Promise((resolve, reject) => {
    let done = false;
    const leave = (): boolean => {
      if (done) return false;
      done = true;
      chain.waiters -= 1;
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const onAbort = (): void => {
      if (!leave()) return;
      reject(new OperationAbortedError(chain.ref, { cause: signal?.reason }));
      if (chain.waiters === 0) chain.controller.abort(new OperationAbortedError(chain.ref));
    };
    chain.promise.then(
      (result) => leave() && resolve(result),
      (error: unknown) => leave() && reject(error),
    );
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * One admitted attempt at a guarded request, in its two forms: the handler's response stored after
 * it ran (`plainAttempt`), or the handler run inside the transaction that stores its response
 * (`transactionAttempt`, `transaction: true`).
 *
 * @module
 * @internal
 */
import { LeaseLostError } from '../store/lease-lost.js';
import type { KeyStore, Lease, StoredResponse, Tx } from '../store/types.js';
import type { Decision, GuardContext } from './guard.js';
import { captureStored, isFinalStatus, type WireResponse } from './wire.js';

/** What an attempt needs from the guard that admitted it. */
export interface Attempt {
  readonly store: KeyStore;
  readonly lease: Lease;
  readonly leaseMs: number;
  readonly maxResponseBytes: number;
  /** Ends the key's in-flight mark (wakes its waiters); called once the attempt is settled. */
  readonly end: () => void;
  /** The response with the key echoed. */
  readonly echoed: (response: WireResponse) => WireResponse;
  /** Gives the key up (nothing stored): a retry runs afresh. */
  readonly release: () => Promise<unknown>;
  /** The answer when the lease was lost before the response was stored (reported). */
  readonly lost: () => WireResponse;
  readonly report: (error: unknown) => void;
  /** The answer when the store failed. */
  readonly unavailable: () => WireResponse;
  readonly context: (tx: Tx | undefined) => GuardContext;
}

/** Thrown inside the transaction to roll it back: the response is not final. */
class NotFinal extends Error {
  constructor(readonly response: WireResponse) {
    super('not a final response');
  }
}

/** The handler runs, then its final response is stored (`finish`), then it is sent. */
export function plainAttempt(attempt: Attempt): Decision {
  const { store, lease, maxResponseBytes, end, echoed, release, lost, report, context } = attempt;
  const complete = async (response: WireResponse): Promise<WireResponse> => {
    if (!isFinalStatus(response.status)) {
      await release();
      return echoed(response);
    }
    try {
      let done;
      try {
        done = await store.finish(lease, captureStored(response, maxResponseBytes));
      } catch (error) {
        // The store's own cap is below the guard's: the response is delivered once, as any too large.
        if (!(error instanceof RangeError)) throw error;
        done = await store.finish(lease, captureStored(response, -1));
      }
      return done.ok ? echoed(response) : lost();
    } catch (error) {
      // The effect happened and only storing its answer failed: the caller learns the outcome.
      report(error);
      return echoed(response);
    }
  };
  return {
    kind: 'run',
    execution: {
      context: context(undefined),
      complete: (response) => complete(response).finally(end),
      abort: async () => void (await release().finally(end)),
    },
  };
}

/**
 * The handler runs inside `finish`'s work: it gets the transaction once the store has opened it,
 * and the transaction commits (or rolls back) when the edge hands over the response.
 */
export async function transactionAttempt(attempt: Attempt): Promise<Decision> {
  const { store, leaseMs, lease, maxResponseBytes, end, echoed, release, lost, report, unavailable, context } = attempt;
  // A handler that never answers (an unhandled rejection, a forgotten branch) must not hold the
  // transaction, and with it the store's lock, past its lease: it is rolled back then.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let handOver!: (response: WireResponse | Error) => void;
  const handed = new Promise<WireResponse | Error>((resolve) => {
    handOver = (response) => {
      clearTimeout(timer);
      resolve(response);
    };
  });
  let opened!: (tx: Tx) => void;
  let over = false;
  const ready = new Promise<{ tx: Tx }>((resolve) => {
    opened = (tx) => {
      // Past its lease the attempt is fenced out, as when another request took the key over.
      timer = setTimeout(() => {
        over = true;
        handOver(new LeaseLostError());
      }, leaseMs);
      const fenced = <T>(statement: () => Promise<T>): Promise<T> => (over ? Promise.reject(new LeaseLostError()) : statement());
      resolve({
        tx: {
          dialect: tx.dialect,
          run: (sql, params) => fenced(() => tx.run(sql, params)),
          all: (sql, params) => fenced(() => tx.all(sql, params)),
          get: (sql, params) => fenced(() => tx.get(sql, params)),
        },
      });
    };
  });
  let stored: StoredResponse | undefined;
  const outcome = store
    .finish(
      lease,
      () => stored!,
      async (tx) => {
        opened(tx);
        const response = await handed;
        if (response instanceof Error) throw response;
        if (!isFinalStatus(response.status)) throw new NotFinal(response);
        stored = captureStored(response, maxResponseBytes);
      },
    )
    .then(
      (done) => ({ ok: done.ok }),
      (error: unknown) => ({ error }),
    );
  const first = await Promise.race([ready, outcome]);
  if (!('tx' in first)) {
    // Nothing ran: the store failed, or the lease was lost, before the transaction opened.
    if ('ok' in first) {
      end();
      return { kind: 'answer', response: lost() };
    }
    report(first.error);
    await release().finally(end);
    return { kind: 'answer', response: unavailable() };
  }
  const settle = async (): Promise<WireResponse | undefined> => {
    const result = await outcome;
    if ('ok' in result) return result.ok ? undefined : lost();
    await release();
    if (result.error instanceof NotFinal) return undefined;
    report(result.error);
    return unavailable();
  };
  return {
    kind: 'run',
    execution: {
      context: context(first.tx),
      async complete(response) {
        handOver(response);
        return ((await settle().finally(end)) ?? echoed(response));
      },
      async abort(error) {
        handOver(error instanceof Error ? error : new Error(String(error)));
        await settle().finally(end);
      },
    },
  };
}

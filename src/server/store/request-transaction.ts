/**
 * A whole request's transaction, as a store hands it over ({@link KeyStore.beginRequest}): the
 * key is this request's, seen by nobody, from `beginRequest` until `commit` (the response stored
 * with the request's own writes) or `rollback` (nothing kept, the key free again). The middleware
 * with `transaction: true` runs the framework's handler in between; the reference handler runs an
 * operation without an external call with {@link runWholeRequest}.
 *
 * A store whose transactions are callbacks (`store.transaction(work)`, SQLite's group write)
 * hands one over with {@link requestOver}; a store without `beginRequest` gets {@link beginOverAdmit}
 * over its `admit` ({@link beginRequestOf}).
 *
 * @module
 */
import { finalOf } from './core.js';
import { LeaseLostError } from './lease-lost.js';
import type { AdmitInput, AdmitResult, BeganRequest, KeyRow, RequestTransaction, StoredResponse, Tx, WholeRequest } from './records.js';
import type { KeyStore } from './types.js';

/**
 * A {@link WholeRequest} in one transaction of `store`: begun, its work, then committed with its
 * response, or rolled back when the work or its response throws (and rethrown). Answers as
 * `admit` would, the owner's row finished.
 *
 * @example
 * ```ts
 * const result = await runWholeRequest(store, input, { work: (tx) => tx.run('INSERT …'), response: () => ({ status: 201, headers: {}, body: '{}' }) });
 * ```
 */
export async function runWholeRequest<T>(store: KeyStore, input: AdmitInput, whole: WholeRequest<T>): Promise<AdmitResult<T>> {
  const began = await beginRequestOf(store)(input);
  if (!began.owned) return began;
  const { request, row } = began;
  let value: T;
  let stored: StoredResponse;
  try {
    value = await whole.work(request.tx, row);
    stored = whole.response(value);
  } catch (error) {
    await request.rollback();
    throw error;
  }
  await request.commit(stored);
  const lease = { clientId: input.clientId, key: input.key, token: '' };
  return { owned: true, lease, row: { ...row, state: 'finished', response: stored, leaseRemainingMs: null }, first: { value } };
}

/** A promise with its resolver. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** Why a handed-over transaction's work throws: the holder rolled it back. */
class RolledBack extends Error {
  override readonly name = 'RolledBack';
}

/**
 * Hands over the transaction of a store call that takes its work as a callback (`start(work)`):
 * `work` opens it, and waits for the holder's `commit` (its response becomes the work's result,
 * stored by the call) or `rollback` (the work throws, the call rolls back). `stored(result)`
 * tells whether the call's result stored the response. Resolves with the transaction once the
 * work runs, or with the call's own result when it ended without running the work.
 *
 * @example
 * ```ts
 * const opened = await requestOver((work) => store.write(lease, { kind: 'finish', response: (r: StoredResponse | undefined) => r! }, work), (done) => done.ok);
 * if ('request' in opened) await opened.request.commit(response);
 * ```
 */
export async function requestOver<R>(
  start: (work: (tx: Tx) => Promise<StoredResponse>) => Promise<R>,
  stored: (result: R) => boolean,
): Promise<{ readonly request: RequestTransaction } | { readonly ended: R }> {
  const opened = deferred<Tx>();
  const decided = deferred<StoredResponse | RolledBack>();
  const finished = start(async (tx) => {
    opened.resolve(tx);
    const decision = await decided.promise;
    if (decision instanceof RolledBack) throw decision;
    return decision;
  });
  const first = await Promise.race([opened.promise.then((tx) => ({ tx })), finished.then((ended) => ({ ended }))]);
  if ('ended' in first) return first;
  const request: RequestTransaction = {
    tx: first.tx,
    async commit(response) {
      decided.resolve(response);
      if (!stored(await finished)) throw new LeaseLostError();
    },
    async rollback() {
      decided.resolve(new RolledBack('rolled back by its holder'));
      await finished.catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    },
  };
  return { request };
}

/**
 * The check of the response's size a store makes before it stores a whole request's response:
 * the response itself, or a throw.
 *
 * @example
 * ```ts
 * const checked = checkedResponse('postgresKeyStore', 65_536, input.key, response);
 * ```
 */
export const checkedResponse = (store: string, maxBytes: number, key: string, response: StoredResponse): StoredResponse =>
  finalOf(store, key, maxBytes, response, undefined);

/**
 * `beginRequest` for a store whose admission runs a {@link WholeRequest} as a callback in its
 * own transaction (SQLite's group write): the transaction handed over by {@link requestOver}.
 *
 * @example
 * ```ts
 * const beginRequest = beginOverAdmit(admitWithWhole); // the store's `beginRequest`
 * ```
 */
export function beginOverAdmit(
  admit: (input: AdmitInput, whole: WholeRequest<StoredResponse>) => Promise<AdmitResult<StoredResponse>>,
): (input: AdmitInput) => Promise<BeganRequest> {
  return async (input) => {
    let row: KeyRow | undefined;
    const work = (run: (tx: Tx) => Promise<StoredResponse>): Promise<AdmitResult<StoredResponse>> =>
      admit(input, { work: (tx, admitted) => ((row = admitted), run(tx)), response: (stored) => stored });
    const opened = await requestOver(work, (result) => result.owned);
    if ('request' in opened) return { owned: true, row: row!, request: opened.request };
    if (opened.ended.owned) throw new Error('oncely: the key store admitted a whole request without running its work');
    return opened.ended;
  };
}

/**
 * The store's `beginRequest`, or, for a store without one, {@link beginOverAdmit} over its
 * `admit` (the whole request run as the admission's `first`, its transaction handed over).
 *
 * @example
 * ```ts
 * const began = await beginRequestOf(store)(input);
 * ```
 */
export function beginRequestOf(store: KeyStore): (input: AdmitInput) => Promise<BeganRequest> {
  if (store.beginRequest) return (input) => store.beginRequest!(input);
  return beginOverAdmit((input, whole) => store.admit(input, whole));
}

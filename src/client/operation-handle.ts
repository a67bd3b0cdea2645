/**
 * The handle of one journaled operation: `send()` joins or starts the key's attempt chain,
 * `state`, `subscribe()` and `settled()` follow it (see `follow.ts`). One chain per key per
 * client, one followed state per key per client, shared by every handle of that key.
 *
 * @module
 */
import { OperationAbortedError, type ExpiredOperationError, type OncelyError, type OperationRef } from '../errors.js';
import { createTracker, isFinal, outcomeOf, type OperationSnapshot, type SettledOptions, type Tracker } from './follow.js';
import { runChain, snapshotOf, type FreshRecord } from './operation.js';
import type { ResolvedOptions } from './options.js';
import type { OperationResult } from './results.js';
import { join, type Chain } from './waiting.js';
import type { WriteBehinds } from './write-behind.js';

/**
 * Options of {@link Operation.send}.
 *
 * @example
 * ```ts
 * await op.send({ signal: AbortSignal.timeout(10_000) }); // stop waiting after 10 s; the op stays pending
 * ```
 */
export interface SendOptions {
  /** Stops waiting for this call; the operation stays pending. */
  readonly signal?: AbortSignal;
}

/**
 * One logical operation, journaled and ready to send. `send()` may be called any number of
 * times: concurrent calls share one attempt chain, and calls after it settled return the
 * stored result (or throw the stored typed error) without a request.
 *
 * @example
 * ```ts
 * const op = await client.prepare('POST', 'v1/payments', { json }); // key minted and journaled
 * payButton.onclick = () => op.send();                             // a double click: one payment
 * ```
 */
export interface Operation {
  readonly key: string;
  readonly method: string;
  readonly url: string;
  /** Sends (or joins the send in flight, or returns the settled result). */
  send<T = unknown>(options?: SendOptions): Promise<OperationResult<T>>;
  /**
   * Where the operation stands now (see {@link OperationSnapshot}); shared by every handle of
   * this key in this client.
   *
   * @example
   * ```ts
   * if (op.state.state === 'pending' && op.state.retryAt === null) showBanner('Payment not confirmed yet; you will not be charged twice');
   * ```
   */
  readonly state: OperationSnapshot;
  /**
   * Calls `listener` with each new state (not the current one: read `state`); returns the
   * function that stops it.
   *
   * @example
   * ```ts
   * const stop = op.subscribe((s) => (badge.textContent = s.state));
   * ```
   */
  subscribe(listener: (snapshot: OperationSnapshot) => void): () => void;
  /**
   * Waits for the operation to settle without sending anything: resolves with the result once it
   * succeeds, rejects with its typed error once it fails or expires — whoever sends it (this
   * client, another tab or worker through the shared journal, another process). A pending
   * operation keeps it waiting until someone finishes it, or until `signal` aborts.
   *
   * @example
   * ```ts
   * const outcome = await op.settled({ signal: AbortSignal.timeout(60_000) });
   * ```
   */
  settled<T = unknown>(options?: SettledOptions): Promise<OperationResult<T>>;
}

/**
 * What a client shares with its operations (internal).
 *
 * @internal
 */
export interface Engine {
  readonly options: ResolvedOptions;
  /** Chains in flight by key: one per key per client. */
  readonly inflight: Map<string, Chain>;
  /** Throws once the client is closed. */
  readonly assertOpen: () => void;
  /** Followed state by key, while it can still change (a final one is dropped: the journal has it). */
  readonly trackers: Map<string, Tracker>;
  /** Outcomes written behind, which `close()` sees committed (`undefined`: the journal writes none behind). */
  readonly behind: WriteBehinds | undefined;
  /** Hear every change of every tracker of this client (`client.subscribe`). */
  readonly listeners: Set<(key: string, snapshot: OperationSnapshot) => void>;
}

/**
 * The tracker of `ref`'s key, created at `initial` when this client follows it for the first time.
 *
 * @internal
 */
export function trackerFor(engine: Engine, ref: OperationRef, initial: OperationSnapshot): Tracker {
  const existing = engine.trackers.get(ref.key);
  if (existing) return existing;
  const tracker = createTracker(initial, () => {
    if (engine.trackers.get(ref.key) === tracker) engine.trackers.delete(ref.key);
  });
  if (isFinal(initial)) return tracker;
  engine.trackers.set(ref.key, tracker);
  // Heard before the handle's own subscribers: a list of the client's operations (the React
  // hook) updates in the same turn as the operation's own view.
  tracker.subscribe((snapshot) => engine.listeners.forEach((listener) => listener(ref.key, snapshot)));
  engine.listeners.forEach((listener) => listener(ref.key, initial));
  return tracker;
}

/**
 * Creates the handle of a journaled operation (internal).
 *
 * @internal
 */
export function createOperation(
  engine: Engine,
  ref: OperationRef,
  unjournaled: Readonly<Record<string, string>>,
  defaultSignal: AbortSignal | undefined,
  initial: OperationSnapshot,
  fresh?: FreshRecord,
): Operation {
  // Good for the first chain only, started at once by post(); a later send() reads the journal.
  let justCreated = fresh;
  const tracker = trackerFor(engine, ref, initial);
  const track = tracker.set;
  // The chain's end is the state's: set before any waiter hears it, so `await send()` then
  // `state` agree.
  const settle = (chain: Promise<OperationResult>): Promise<OperationResult> =>
    chain.then(
      (result) => (track({ state: 'succeeded', result }), result),
      (error: unknown) => {
        const outcome = outcomeOf(error);
        track(outcome === 'failed' || outcome === 'expired' ? ({ state: outcome, error } as OperationSnapshot) : { state: 'pending', retryAt: null, error });
        throw error;
      },
    );
  // Another holder's progress reaches this client only through the journal: what it settled,
  // or that it was submitted. A pending row says nothing a send here has not said better.
  const poll = async (): Promise<OperationSnapshot | undefined> => {
    if (engine.inflight.has(ref.key)) return undefined;
    const record = await engine.options.journal.get(engine.options.target('settled()').scope, ref.key);
    if (record === undefined) return undefined;
    const read = snapshotOf(ref, record, engine.options.keyTtlMs);
    return isFinal(read) || (tracker.snapshot.state === 'prepared' && read.state !== 'prepared') ? read : undefined;
  };
  return {
    key: ref.key,
    method: ref.method,
    url: ref.url,
    get state() {
      return tracker.snapshot;
    },
    subscribe: tracker.subscribe,
    settled<T>(options: SettledOptions = {}): Promise<OperationResult<T>> {
      return tracker.settled(poll, options) as Promise<OperationResult<T>>;
    },
    send<T>(sendOptions: SendOptions = {}): Promise<OperationResult<T>> {
      engine.assertOpen();
      let chain = engine.inflight.get(ref.key);
      // A chain whose waiters all gave up is winding down: a new click must not inherit its
      // abort, so it starts a fresh chain, but only once the old one has let go of the key.
      if (chain === undefined || chain.controller.signal.aborted) {
        const previous = chain?.promise.then(
          () => undefined,
          () => undefined,
        );
        const controller = new AbortController();
        const clientSignal = engine.options.signal;
        if (clientSignal?.aborted) controller.abort(new OperationAbortedError(ref, { cause: clientSignal.reason }));
        const first = justCreated;
        justCreated = undefined;
        const run = (): Promise<OperationResult> =>
          runChain(engine.options, ref, unjournaled, controller.signal, track, engine.behind, previous ? undefined : first);
        track({ state: 'sending', elsewhere: false });
        const started: Chain = {
          ref,
          controller,
          waiters: 0,
          promise: settle(previous ? previous.then(run) : run()).finally(() => {
            if (engine.inflight.get(ref.key) === started) engine.inflight.delete(ref.key);
          }),
        };
        engine.inflight.set(ref.key, started);
        chain = started;
      }
      return join(chain, sendOptions.signal ?? defaultSignal) as Promise<OperationResult<T>>;
    },
  };
}

/**
 * Aborts every chain in flight (client signal, `close()`); their operations stay pending.
 *
 * @internal
 */
export function abortAll(engine: Engine, cause: unknown): Promise<unknown> {
  const chains = [...engine.inflight.values()];
  for (const chain of chains) chain.controller.abort(new OperationAbortedError(chain.ref, { cause }));
  return Promise.allSettled(chains.map((chain) => chain.promise));
}

/**
 * The worker's half: resumes the submitted operations of one scope from the journal the page
 * wrote (IndexedDB, shared by the origin's pages and workers), when the browser wakes the
 * Service Worker.
 *
 * ```
 * page    prepare ─► Pay: send() ─► attempt ✗ no answer ─► requestBackgroundSync() ─► tab closed
 * worker  sync / start / online ─► resume(): claim (Web Lock) ─► attempt ─► settled ─► channel + onSettled
 *                                             └─ held by a page or another run ─► poll until it is let go or settled
 * ```
 *
 * Page and worker claim an operation through the same Web Lock before each send, so at most
 * one of them has it in flight; a lock dies with its holder, so a tab closed mid-request frees
 * it at once. A `sync` event's run that leaves operations pending (no answer, a 5xx past the
 * budget, a 401) fails the event, so the browser fires it again later; the journal keeps them
 * pending either way, for the next page load or worker start.
 *
 * @module
 */
import { createClient } from '../browser.js';
import type { Client } from '../client/create-client.js';
import type { ResumeOutcome } from '../client/results.js';
import { ErrorCode, OncelyError } from '../errors.js';
import { normalizeRetryOptions, type ClientOptions } from '../client/options.js';
import { OperationState } from '../journal/types.js';
import { sleep } from '../client/waiting.js';
import { DEFAULT_SYNC_TAG } from './background-sync.js';
import { DEFAULT_CHANNEL, ResumeTrigger, type ServiceWorkerSettled } from './messages.js';

/** How often a run looks again at an operation another holder (a page) has in flight. */
const HELD_POLL_MS = 500;

/**
 * The events a Service Worker's global scope delivers (`self` satisfies it).
 *
 * @example
 * ```ts
 * const worker: WorkerEvents = self;
 * ```
 */
export interface WorkerEvents {
  addEventListener(type: string, listener: (event: Event) => void): void;
  removeEventListener(type: string, listener: (event: Event) => void): void;
}

/** A Background Sync `SyncEvent` (not in TypeScript's DOM types). */
interface SyncEventLike extends Event {
  readonly tag: string;
  readonly lastChance: boolean;
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Options of {@link createServiceWorkerResumer}: the page's client options that shape a request
 * (the same `baseUrl` and `scope`, or the worker sees other operations), plus the worker's own.
 *
 * @example
 * ```ts
 * const options: ServiceWorkerResumerOptions = { baseUrl: location.origin, credentials: 'include' };
 * ```
 */
export interface ServiceWorkerResumerOptions extends Pick<
  ClientOptions,
  'baseUrl' | 'scope' | 'headers' | 'journal' | 'retry' | 'keyTtlMs' | 'timeoutMs' | 'claimTtlMs' | 'fetch' | 'onAttempt' | 'onRetry'
> {
  /**
   * The `credentials` mode of the worker's requests: `'include'` sends the site's cookies to an
   * API on another origin (which must allow it with CORS). Credentials are never journaled:
   * cookies come from the browser's jar, tokens from `headers`.
   * @default 'same-origin' (cookies go to the worker's own origin only)
   * @example
   * ```ts
   * createServiceWorkerResumer({ baseUrl: 'https://api.shop.example', credentials: 'include' });
   * ```
   */
  readonly credentials?: RequestCredentials;
  /**
   * The Background Sync tag to answer; the page's `requestBackgroundSync({ tag })` must match.
   * @default DEFAULT_SYNC_TAG ('oncely')
   */
  readonly syncTag?: string;
  /**
   * The BroadcastChannel open pages hear outcomes on ({@link ServiceWorkerSettled}), or `null`
   * for none.
   * @default DEFAULT_CHANNEL ('oncely')
   */
  readonly channel?: string | null;
  /**
   * Called once per operation the worker settles, e.g. to show a notification. The event that
   * woke the worker waits for it (up to the browser's limit).
   * @example
   * ```ts
   * createServiceWorkerResumer({ baseUrl, onSettled: (m) => registration.showNotification(m.state === 'succeeded' ? 'Paid' : 'Declined') });
   * ```
   */
  readonly onSettled?: (message: ServiceWorkerSettled) => void | Promise<void>;
  /**
   * Gets the errors of runs no event waits for (the worker's start, `online`), such as a journal
   * that cannot be read, and those of `onSettled`.
   * @default console.error
   */
  readonly onError?: (error: unknown, trigger: ResumeTrigger) => void;
  /**
   * Where the worker's events arrive.
   * @default globalThis (the Service Worker's `self`)
   */
  readonly worker?: WorkerEvents;
}

/**
 * What one run of the resumer did.
 *
 * @example
 * ```ts
 * const report: ResumeReport = await resumer.resume('online');
 * console.log(report.pending.length, 'still pending');
 * ```
 */
export interface ResumeReport {
  readonly trigger: ResumeTrigger;
  /** The last outcome of each submitted operation the run saw (see `ResumeOutcome`). */
  readonly outcomes: readonly ResumeOutcome[];
  /** Keys still pending after the run: no answer yet, or held elsewhere until the run gave up. */
  readonly pending: readonly string[];
}

/**
 * A running resumer: listening to the worker's `sync` and `online` events.
 *
 * @example
 * ```ts
 * const resumer = createServiceWorkerResumer({ baseUrl: location.origin });
 * const { pending } = await resumer.resume('online'); // what the `online` event does
 * console.log(`${pending.length} still pending in ${resumer.client.scope}`);
 * ```
 */
export interface ServiceWorkerResumer {
  /** The worker's client (its journal, scope and `pending()`). */
  readonly client: Client;
  /**
   * Resumes now, as each trigger does. Runs never overlap: a call during a run gets one more
   * run after it (calls in the meantime share that one).
   */
  resume(trigger: ResumeTrigger): Promise<ResumeReport>;
  /** Stops listening, stops the run in flight (its operations stay pending) and closes the client. */
  close(): Promise<void>;
}

/** Passes `credentials` to every fetch of the worker's client. */
function withCredentials(custom: ClientOptions['fetch'], credentials: RequestCredentials): (request: Request) => Promise<Response> {
  return (request) => (custom ?? fetch)(new Request(request, { credentials }));
}

/**
 * Starts resuming from a Service Worker: call it once, at the top level of the worker script.
 * It resumes the submitted operations of its scope at once (the worker's start), on the `sync`
 * event whose tag is `syncTag`, and on `online`; prepared-only operations are never sent.
 * Retry-After and the retry policy apply as in the page: a 5xx is retried, a final answer
 * settles, an unknown outcome stays pending.
 *
 * @example
 * ```ts
 * // sw.ts, registered by the page with navigator.serviceWorker.register('/sw.js')
 * import { createServiceWorkerResumer } from 'oncely/service-worker';
 *
 * createServiceWorkerResumer({
 *   baseUrl: 'https://api.shop.example', // the page's baseUrl (and scope, if it has one)
 *   credentials: 'include',              // the session cookie, sent to the API's origin (CORS allows it)
 * });
 * ```
 */
export function createServiceWorkerResumer(options: ServiceWorkerResumerOptions): ServiceWorkerResumer {
  const { credentials, syncTag = DEFAULT_SYNC_TAG, channel: channelName = DEFAULT_CHANNEL, onSettled, onError, worker: events, ...clientOptions } = options;
  const worker = events ?? (globalThis as unknown as WorkerEvents);
  const { budgetMs } = normalizeRetryOptions(options.retry);
  const channel = channelName === null ? undefined : new BroadcastChannel(channelName);
  const stopped = new AbortController();
  const hooks: Promise<unknown>[] = [];
  let trigger: ResumeTrigger = ResumeTrigger.Start;

  const client = createClient({
    ...clientOptions,
    ...(credentials === undefined ? {} : { fetch: withCredentials(clientOptions.fetch, credentials) }),
    onSettled: ({ method, url, key, state, status }) => {
      const message: ServiceWorkerSettled = { type: 'settled', by: 'service-worker', scope: client.scope, key, method, url, state, status, trigger };
      if (!stopped.signal.aborted) channel?.postMessage(message);
      // Awaited by the run, so that the event which woke the worker waits for the app's hook.
      if (onSettled) hooks.push(Promise.resolve().then(() => onSettled(message)));
    },
  });

  const reportError =
    (runTrigger: ResumeTrigger) =>
    (error: unknown): void => {
      if (stopped.signal.aborted) return;
      if (onError) onError(error, runTrigger);
      else console.error(`oncely: resuming in the Service Worker (${runTrigger})`, error);
    };

  // Submitted operations another holder (a page) has in flight now: resume() skipped them.
  const heldElsewhere = async (outcomes: Iterable<ResumeOutcome>): Promise<string[]> => {
    const held: string[] = [];
    for (const outcome of outcomes) {
      if (outcome.state !== 'skipped') continue;
      const record = await client.journal.get(client.scope, outcome.key).catch(() => undefined);
      if (record?.state === OperationState.Pending) held.push(outcome.key);
    }
    return held;
  };

  const runOnce = async (runTrigger: ResumeTrigger): Promise<ResumeReport> => {
    trigger = runTrigger;
    const deadline = Date.now() + budgetMs;
    const latest = new Map<string, ResumeOutcome>();
    let held: string[] = [];
    for (;;) {
      for (const outcome of await client.resume({ signal: stopped.signal })) latest.set(outcome.key, outcome);
      held = await heldElsewhere(latest.values());
      // A tab closed mid-request lets go of its lock at once; a page sending it settles it.
      if (held.length === 0 || Date.now() + HELD_POLL_MS > deadline) break;
      try {
        await sleep(HELD_POLL_MS, stopped.signal);
      } catch {
        break;
      }
    }
    // A hook that failed says nothing about the payments: the run's outcome is the journal's.
    for (const result of await Promise.allSettled(hooks.splice(0))) if (result.status === 'rejected') reportError(runTrigger)(result.reason);
    const outcomes = [...latest.values()];
    return { trigger: runTrigger, outcomes, pending: outcomes.filter((o) => o.state === 'pending' || held.includes(o.key)).map((o) => o.key) };
  };

  let running: Promise<ResumeReport> | undefined;
  let queued: Promise<ResumeReport> | undefined;
  const resume = (runTrigger: ResumeTrigger): Promise<ResumeReport> => {
    if (stopped.signal.aborted) return Promise.reject(new OncelyError(ErrorCode.Config, 'this Service Worker resumer is closed'));
    if (running === undefined) {
      const run = runOnce(runTrigger).finally(() => {
        if (running === run) running = undefined;
      });
      running = run;
      return run;
    }
    // A trigger during a run (the network came back while it waited) gets a run of its own after it.
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return resume(runTrigger);
      });
    return queued;
  };

  const onSync = (event: Event): void => {
    const sync = event as SyncEventLike;
    if (sync.tag !== syncTag) return;
    sync.waitUntil(
      resume(ResumeTrigger.Sync).then(({ pending }) => {
        // Rejecting asks the browser to fire the sync again later (with backoff); on the last
        // chance there is no later, and the journal keeps them for the next page load.
        if (pending.length > 0 && !sync.lastChance) {
          throw new OncelyError(
            ErrorCode.OperationPending,
            `${pending.length} operation(s) still pending (Idempotency-Key ${pending.join(', ')}); the browser will fire "${syncTag}" again`,
          );
        }
      }),
    );
  };
  const onOnline = (): void => void resume(ResumeTrigger.Online).catch(reportError(ResumeTrigger.Online));

  worker.addEventListener('sync', onSync);
  worker.addEventListener('online', onOnline);
  void resume(ResumeTrigger.Start).catch(reportError(ResumeTrigger.Start));

  return {
    client,
    resume,
    async close() {
      if (stopped.signal.aborted) return;
      stopped.abort(new OncelyError(ErrorCode.Aborted, 'the Service Worker resumer was closed'));
      worker.removeEventListener('sync', onSync);
      worker.removeEventListener('online', onOnline);
      await client.close();
      await Promise.allSettled([running, queued]);
      channel?.close();
    },
  };
}

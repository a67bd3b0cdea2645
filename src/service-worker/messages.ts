/**
 * What the Service Worker tells open pages (BroadcastChannel) and the app's hook when it
 * settles an operation.
 *
 * @module
 */

/**
 * The BroadcastChannel a Service Worker resumer posts on unless told otherwise (`channel` of
 * `createServiceWorkerResumer`).
 *
 * @example
 * ```ts
 * new BroadcastChannel(DEFAULT_CHANNEL).onmessage = (event) => console.log(event.data);
 * ```
 */
export const DEFAULT_CHANNEL = 'oncely';

/**
 * What made the worker resume: a Background Sync event, the worker's start (any event that
 * woke it, or its installation), or the worker's `online` event.
 *
 * @example
 * ```ts
 * if (message.trigger === ResumeTrigger.Sync) console.log('finished in the background');
 * ```
 */
export const ResumeTrigger = {
  Sync: 'sync',
  Start: 'start',
  Online: 'online',
} as const;

/** One of {@link ResumeTrigger}'s values. */
export type ResumeTrigger = (typeof ResumeTrigger)[keyof typeof ResumeTrigger];

/**
 * Posted on the channel (and passed to `onSettled`) once the worker has settled an operation
 * and the journal holds the outcome. An open page that shows the operation can call its
 * `send()`: it answers from the journal without a request.
 *
 * @example
 * ```ts
 * new BroadcastChannel('oncely').addEventListener('message', ({ data }: MessageEvent<ServiceWorkerSettled>) => {
 *   if (data.type === 'settled' && data.key === op.key) void op.send().then(showPaid, showDeclined);
 * });
 * ```
 */
export interface ServiceWorkerSettled {
  readonly type: 'settled';
  /** Always `'service-worker'`: tells these messages apart from an app's own on a shared channel. */
  readonly by: 'service-worker';
  /** The operation's journal scope (see `scopeOf`). */
  readonly scope: string;
  /** The idempotency key. */
  readonly key: string;
  readonly method: string;
  readonly url: string;
  readonly state: 'succeeded' | 'failed';
  /** The final HTTP status. */
  readonly status: number;
  /** What woke the worker for the run that settled it. */
  readonly trigger: ResumeTrigger;
}

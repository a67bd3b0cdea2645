/**
 * The options of `client.resume()`.
 *
 * @module
 */

/**
 * Options of `Client.resume`.
 *
 * @example
 * ```ts
 * const outcomes = await client.resume({ concurrency: 8, signal: AbortSignal.timeout(60_000) });
 * ```
 */
export interface ResumeOptions {
  /** Stops waiting; unfinished operations stay pending. */
  readonly signal?: AbortSignal;
  /**
   * How many operations are sent at once.
   * @default 4
   */
  readonly concurrency?: number;
  /**
   * Wait for an operation another tab, worker or process holds (its claim) instead of reporting
   * it `skipped`: it is followed until that holder lets go (then sent from here) or settles it,
   * within the retry budget. A second `resume()` in the same client always joins the first one's
   * sends.
   * @default false
   * @example
   * ```ts
   * const outcomes = await client.resume({ follow: true }); // a payment another tab is sending: its outcome, not 'skipped'
   * ```
   */
  readonly follow?: boolean;
}

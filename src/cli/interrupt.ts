/**
 * Ctrl-C for the commands that send (`oncely upload`, `oncely resume`). The first stops sending:
 * requests in flight are cut off and stay pending, and the command ends as it would, writing and
 * reporting what it knows. A second one leaves early, but only once the outcomes already in hand
 * are written (`client.close()` waits for the journal's write-behinds): leaving before that would
 * leave settled operations pending, and the next run would send them again. A third one leaves at
 * once, and says what that costs.
 *
 * @module
 * @internal
 */

/** What the handler does at each Ctrl-C. */
export interface InterruptActions {
  /** The first Ctrl-C: stop sending (abort the client's signal). */
  readonly stop: () => void;
  /** The second: write every outcome in hand (close the client and its journal). */
  readonly flush: () => Promise<unknown>;
}

/**
 * Listens for SIGINT until the returned function is called.
 *
 * @example
 * ```ts
 * const stopListening = onInterrupt({ stop: () => abort.abort(), flush: () => client.close() });
 * try { await client.resume({ signal: abort.signal }); } finally { stopListening(); }
 * ```
 * @internal
 */
export function onInterrupt(actions: InterruptActions): () => void {
  let count = 0;
  const handler = (): void => {
    count += 1;
    if (count === 1) {
      actions.stop();
      return;
    }
    if (count === 2) {
      process.stderr.write(
        '\nwriting the outcomes already received to the journal, then leaving (Ctrl-C again to leave now: those would be sent again by the next run, under their keys)\n',
      );
      const leave = (): never => process.exit(130);
      void actions.flush().then(leave, leave);
      return;
    }
    process.exit(130);
  };
  process.on('SIGINT', handler);
  return () => void process.off('SIGINT', handler);
}

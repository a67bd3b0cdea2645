/**
 * The outcomes a client has written *behind* (`Journal.updateLater`): handed to the caller before
 * their write committed, so `close()` must see each of them committed before it resolves. An
 * outcome left unwritten reads as pending, claimed by a process that is gone, and the next
 * `resume()` sends it again: a replay where the server still holds the key, a second effect where
 * it does not (or never deduplicated).
 *
 * A write-behind that fails (a lock held past the busy timeout, a full disk) is written again
 * with `update()` at once, and once more by `flush()`; what still fails is reported by `flush()`.
 *
 * @module
 * @internal
 */
import { JournalError } from '../errors.js';
import type { Journal, OperationPatch } from '../journal/types.js';

/**
 * The write-behinds of one client.
 *
 * @internal
 */
export interface WriteBehinds {
  /** Writes `patch` behind (`updateLater`); resolves once it is written or given up (never rejects). */
  write(scope: string, key: string, patch: OperationPatch): Promise<void>;
  /** Waits for every write made so far, tries the failed ones once more, and resolves to the keys still unwritten. */
  flush(): Promise<string[]>;
}

/**
 * Creates the write-behind bookkeeping of one client on `journal`, or `undefined` when the
 * journal has no `updateLater` (every write of it is awaited: nothing is left behind).
 *
 * @example
 * ```ts
 * const behind = writeBehinds(journal);
 * if (behind) void behind.write(scope, key, { state: 'succeeded', result });
 * const lost = (await behind?.flush()) ?? []; // [] once every outcome is in the journal
 * ```
 * @internal
 */
export function writeBehinds(journal: Journal): WriteBehinds | undefined {
  const { updateLater } = journal;
  if (!updateLater) return undefined;
  const inFlight = new Set<Promise<void>>();
  // The outcomes that could not be written, by key: each entry writes its outcome again.
  const unwritten = new Map<string, () => Promise<unknown>>();
  return {
    write(scope, key, patch) {
      const again = (): Promise<unknown> => journal.update(scope, key, patch);
      const write = updateLater
        .call(journal, scope, key, patch)
        .catch(again)
        .then(
          () => undefined,
          () => void unwritten.set(key, again),
        );
      inFlight.add(write);
      void write.finally(() => inFlight.delete(write));
      return write;
    },
    async flush() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      for (const [key, again] of unwritten) {
        await again().then(
          () => unwritten.delete(key),
          () => undefined,
        );
      }
      return [...unwritten.keys()];
    },
  };
}

/**
 * The error of a `close()` that could not write every outcome it had handed out.
 *
 * @example
 * ```ts
 * const unwritten = (await behind?.flush()) ?? [];
 * if (unwritten.length > 0) throw unwrittenError(unwritten);
 * ```
 * @internal
 */
export function unwrittenError(keys: readonly string[]): JournalError {
  const listed = keys.slice(0, 10).join(', ') + (keys.length > 10 ? `, and ${keys.length - 10} more` : '');
  return new JournalError(`the outcome of ${keys.length} settled operation(s) could not be written to the journal (Idempotency-Key ${listed})`, {
    hint: 'they read as pending: the next resume() sends them again under their keys, which a server that still holds them answers with its stored response',
  });
}

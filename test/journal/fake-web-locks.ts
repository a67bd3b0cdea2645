/**
 * A minimal in-process Web Locks API (exclusive locks, `ifAvailable` only): Node has no
 * `navigator.locks`, and fake-indexeddb brings none. One instance plays the origin shared by
 * every "tab" (journal handle) of a test.
 */
import type { LockRequester } from '../../src/journal/web-locks.js';

export function fakeWebLocks(): LockRequester & { held(): number } {
  const held = new Set<string>();
  const request = (async (name: string, options: LockOptions, callback: LockGrantedCallback<unknown>) => {
    if (!options.ifAvailable) throw new Error('fakeWebLocks supports ifAvailable requests only');
    if (held.has(name)) return callback(null);
    held.add(name);
    try {
      return await callback({ name, mode: 'exclusive' } as Lock);
    } finally {
      held.delete(name);
    }
  }) as LockRequester['request'];
  return { request, held: () => held.size };
}

import { describe, expect, it } from 'vitest';
import { webLockClaims } from '../../src/journal/web-locks.js';
import { fakeWebLocks } from './fake-web-locks.js';

describe('webLockClaims', () => {
  it('grants both of two claims one owner makes at once: the second waits for the first instead of finding its own lock taken', async () => {
    const claims = webLockClaims(fakeWebLocks(), 'checkout');
    expect(await Promise.all([claims.acquire('k1', 'tab-a', 60_000), claims.acquire('k1', 'tab-a', 60_000)])).toEqual([true, true]);
    await claims.releaseAll();
  });

  it('still grants only one of two claims made at once by different owners', async () => {
    const locks = fakeWebLocks();
    const claims = webLockClaims(locks, 'checkout');
    expect(await Promise.all([claims.acquire('k1', 'tab-a', 60_000), claims.acquire('k1', 'tab-b', 60_000)])).toEqual([true, false]);
    expect(locks.held()).toBe(1);
    await claims.releaseAll();
    expect(locks.held()).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';

describe('the browser project', () => {
  it('runs in real Chromium with IndexedDB, WebCrypto and Web Locks', () => {
    expect(navigator.userAgent).toMatch(/Chrom/);
    expect(typeof indexedDB.open).toBe('function');
    expect(typeof crypto.subtle.digest).toBe('function');
    expect(typeof navigator.locks.request).toBe('function');
  });
});

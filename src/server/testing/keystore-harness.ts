/**
 * What the KeyStore contract files share: a fresh store per test (migrated with the file's own
 * table, closed after the test), a client id of its own, and admission inputs.
 */
import { afterEach } from 'vitest';
import type { AdmitInput, KeyStore } from '../store/types.js';

/** The store and client id of the running test; `open()` first. */
export interface ContractHarness {
  readonly store: KeyStore;
  readonly clientId: string;
  open(): Promise<void>;
  /** An admission of `key` by this test's client, from the file's defaults and `over`. */
  input(key: string, over?: Partial<AdmitInput>): AdmitInput;
}

/**
 * Call inside a `describe`: registers the `afterEach` that closes the store.
 *
 * @example
 * ```ts
 * const h = contractHarness(factory, 'CREATE TABLE IF NOT EXISTS t (x TEXT)', { requestBody: '{}' });
 * await h.open();
 * await h.store.admit(h.input('k1'));
 * ```
 */
export function contractHarness(
  factory: () => Promise<KeyStore>,
  table: string,
  defaults: Partial<AdmitInput> & { readonly clientSuffix?: string } = {},
): ContractHarness {
  let store: KeyStore | undefined;
  let clientId = '';
  afterEach(async () => {
    await store?.close?.();
    store = undefined;
  });
  const { clientSuffix = '', ...admission } = defaults;
  return {
    get store() {
      if (!store) throw new Error('contractHarness: open() first');
      return store;
    },
    get clientId() {
      return clientId;
    },
    async open() {
      store = await factory();
      await store.migrate?.({ [store.dialect]: table });
      clientId = `c${crypto.randomUUID().slice(0, 8)}${clientSuffix}`;
    },
    input: (key, over = {}) => ({
      requestHash: 'a'.repeat(64),
      endpoint: 'POST /v1/payments',
      requestBody: '{}',
      leaseMs: 10_000,
      ttlMs: 86_400_000,
      ...admission,
      clientId,
      key,
      ...over,
    }),
  };
}

/**
 * `oncely/server/store`: for the people who extend the server library rather than call it: the
 * {@link KeyStore} contract a key store of your own implements (docs/key-store.md), the rows,
 * leases and phase commits it reads and writes, the fingerprint digest a server may swap in, and
 * `ResponseTooLargeError`, which a store throws for a response over its cap (the middleware
 * catches exactly this class).
 * A server author never needs this entry: `oncely/server`, `oncely/server/sqlite`,
 * `oncely/server/postgres` and the middleware entries hold what they call. `Tx` is on both this
 * entry and `oncely/server` (the same declaration): steps and stores both run statements on it.
 * Nothing here imports Node-only code.
 *
 * @module
 */
export { KeyState, WatchEvent } from './store/types.js';
export { beginOverAdmit, requestOver, runWholeRequest } from './store/request-transaction.js';
export type {
  AdmitInput,
  AdmitResult,
  AppSchema,
  BeganRequest,
  Fenced,
  FinalResponse,
  FirstPhase,
  KeyRow,
  KeyStore,
  Lease,
  PhaseCommit,
  PointWrite,
  RequestTransaction,
  StoredResponse,
  Tx,
  WholeRequest,
} from './store/types.js';
export { defaultDigest, webCryptoDigest, type FingerprintDigest } from '../fingerprint.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';

/**
 * `oncely/server/store`: for the people who extend the server library rather than call it: the
 * {@link KeyStore} contract a key store of your own implements (docs/key-store.md), the rows,
 * leases and writes it reads and applies, the helpers that hold the contract's semantics so that a
 * store only runs statements ({@link planWrite}: what a fenced write does to the row, as column
 * values; {@link admitFirst}: a first phase or a whole request inside an admission), and the
 * fingerprint digest's type (a server may swap in its own), and the two errors a store throws:
 * `ResponseTooLargeError` for a response over its cap, `LeaseLostError` for a write whose lease is
 * gone (the front ends catch exactly these). Its contract suites are on
 * `oncely/server/testing`.
 * A server author never needs this entry: `oncely/server`, `oncely/server/sqlite`,
 * `oncely/server/postgres` and the middleware entries hold what they call. `Tx` is on both this
 * entry and `oncely/server` (the same declaration): steps and stores both run statements on it.
 * Nothing here imports Node-only code.
 *
 * @module
 */
export { KeyState, WatchEvent } from './store/types.js';
export { admitFirst, planWrite, type RowChange } from './store/write-plan.js';
export type {
  AdmitInput,
  AdmitResult,
  AppSchema,
  BeganRequest,
  Fenced,
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
  WriteChange,
} from './store/types.js';
export type { FingerprintDigest } from '../fingerprint.js';
export { LeaseLostError } from './store/lease-lost.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';

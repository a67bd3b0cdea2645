/**
 * The server library (`oncely/server`): the idempotency state machine of PROTOCOL.md over a
 * pluggable {@link KeyStore}.
 *
 * @module
 */
export { KeyState } from './store/types.js';
export type {
  AdmitInput,
  AdmitResult,
  AppSchema,
  Fenced,
  KeyRow,
  KeyStore,
  Lease,
  PhaseCommit,
  StoredResponse,
  Tx,
} from './store/types.js';
export type {
  ExternalOutcome,
  ExternalStep,
  FinalStep,
  IdempotentOperation,
  LocalStep,
  ParseResult,
  ProbeOutcome,
  Step,
  StepContext,
} from './types.js';

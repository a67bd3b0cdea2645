/**
 * How an application describes an idempotent operation to the server library: a request
 * parser and an ordered list of steps, each bracketed by recovery points.
 *
 * ```
 * local(H1_DONE) → external(EXT1_SENT … EXT1_DONE) → local(H2_DONE) → external(EXT2_SENT … EXT2_DONE) → final
 * ```
 *
 * - A **local** step's work commits in the same transaction as its recovery point.
 * - An **external** step commits `EXTn_SENT` before the call and its outcome (`EXTn_DONE`) after;
 *   every call carries the derived key `Kn`, and a resumed attempt found at `EXTn_SENT` probes
 *   by `Kn` before calling again.
 * - The **final** step's work commits with `state=finished` and the stored response.
 *
 * @module
 */
import type { StoredResponse, Tx } from './store/types.js';

/** What every step sees. */
export interface StepContext<Input> {
  readonly clientId: string;
  /** The caller's idempotency key. */
  readonly key: string;
  /** The parsed request body. */
  readonly input: Input;
  /** Outputs of the steps committed so far. */
  readonly data: Readonly<Record<string, unknown>>;
  /**
   * The key for external system `n` (see `externalKey`): a uuid5 of the client id, the key and `n`,
   * each length-prefixed, so no other caller's `(clientId, key)` can name the same external effect.
   */
  derivedKey(n: number): string;
}

/** The result of an external call or probe. */
export type ExternalOutcome =
  /** Applied (now or earlier): its result is merged into `data` and `EXTn_DONE` is committed. */
  | { readonly outcome: 'done'; readonly data?: Readonly<Record<string, unknown>> }
  /** A final business refusal (e.g. a decline): stored as the final response and replayed. */
  | { readonly outcome: 'refused'; readonly response: StoredResponse }
  /** No answer (timeout) or an inconclusive probe: `202`, the row is parked at `EXTn_SENT`. */
  | { readonly outcome: 'unknown' }
  /** Transient and certainly not applied (upstream 429/503): `503`, the key is released. */
  | { readonly outcome: 'unavailable'; readonly retryAfterMs?: number };

/** What a probe by derived key found. */
export type ProbeOutcome = ExternalOutcome | { readonly outcome: 'absent' };

/** Local work committed atomically with its recovery point. */
export interface LocalStep<Input> {
  readonly kind: 'local';
  /** The recovery point committed with this work, e.g. `H1_DONE`. */
  readonly point: string;
  run(ctx: StepContext<Input>, tx: Tx): Promise<Readonly<Record<string, unknown>> | void>;
}

/** A call to an external system that cannot be rolled back. */
export interface ExternalStep<Input> {
  readonly kind: 'external';
  /** `n` of the derived key `Kn`. */
  readonly system: number;
  /** Committed before the call, e.g. `EXT1_SENT`. */
  readonly sent: string;
  /** Committed with the outcome, e.g. `EXT1_DONE`. */
  readonly done: string;
  /** Sends the instruction with `derivedKey`. A call that throws counts as `unknown`, never as a failure. */
  call(ctx: StepContext<Input>, derivedKey: string): Promise<ExternalOutcome>;
  /** Asks the system what it did with `derivedKey` (resume at `sent`). A probe that throws counts as `unknown`. */
  probe(ctx: StepContext<Input>, derivedKey: string): Promise<ProbeOutcome>;
}

/** The last step: its work commits with `state=finished` and the response it returns. */
export interface FinalStep<Input> {
  readonly kind: 'final';
  run(ctx: StepContext<Input>, tx: Tx): Promise<StoredResponse>;
}

/** One step of an {@link IdempotentOperation}. */
export type Step<Input> = LocalStep<Input> | ExternalStep<Input>;

/** The result of parsing a request body (before any key is consumed). */
export type ParseResult<Input> = { readonly ok: true; readonly input: Input } | { readonly ok: false; readonly detail: string };

/** An operation the server makes idempotent. */
export interface IdempotentOperation<Input> {
  readonly method: string;
  /** Exact path, e.g. `/v1/payments`. */
  readonly path: string;
  /**
   * Validates the JSON body; a failure answers `400` and consumes no key. `text` is the body as
   * received, for what `JSON.parse` hides: {@link numberLiteral} gives a number's literal text
   * (`12.9999999999999999` parses to 13). Bodies nested deeper than 64 levels, or holding NUL or
   * an unpaired surrogate, are refused before `parse` is called.
   */
  parse(body: unknown, text: string): ParseResult<Input>;
  readonly steps: ReadonlyArray<LocalStep<Input> | ExternalStep<Input>>;
  readonly final: FinalStep<Input>;
}

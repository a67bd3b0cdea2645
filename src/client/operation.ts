/**
 * The lifecycle of one logical operation, from its journal record to a settled result.
 *
 * ```
 * prepare: journal.put(record)                       ← durable before anything is sent
 * send:    join the key's in-flight chain, or start one:
 *            get record ── settled? → stored result / typed error (no request)
 *                       └─ expired? → ExpiredOperationError (no request)
 *            not submitted yet (prepared only)? → claim, read again, update(submittedAt)   ← durable before the first attempt
 *            loop (p-retry):
 *              claim(key) ── refused → re-read (settled elsewhere?) or wait like a 409
 *                            (post()'s first attempt holds the claim put() created the record with)
 *              headers: client's (evaluated now) + journaled + this call's unjournaled ones
 *                       ── fetch would refuse them → RequestRefusedError: failed if nothing
 *                          can have been sent (this chain held the claim throughout and sent
 *                          nothing), else the record stays pending
 *              attempt: journaled bytes + key + headers  → update(attempts, lastStatus) → no answer? onUnanswered
 *              decide:  settle → update(state, result) → result | HttpError…    (a write-behind where
 *                                the journal has updateLater: ordered before any later journal call,
 *                                committed after the caller has its answer)
 *                       reject (401) → HttpError, record stays pending
 *                       retry  → wait delayMs (claim kept alive meanwhile)
 *                       fail   → OperationPendingError, record stays pending
 *            release claim
 * ```
 *
 * Every `send()` of a key within one client joins the same chain, so a double click sends
 * one request at a time with one key; claims extend that to processes sharing a journal.
 *
 * @module
 */
import pRetry, { AbortError } from 'p-retry';
import { ExpiredOperationError, JournalError, RequestRefusedError, type OncelyError, type OperationRef } from '../errors.js';
import { recordDamage } from '../journal/integrity.js';
import { OperationState, isExpired, type NewOperation, type OperationRecord, type StoredResult } from '../journal/types.js';
import { sendAttempt, type AttemptReport, type ResponseReport } from './attempt.js';
import { tracedAttempt } from './telemetry.js';
import type { OperationSnapshot } from './follow.js';
import { checkHeaders } from './request.js';
import type { ResolvedOptions } from './options.js';
import { finalError, isReplay, toResult, toStorable, type OperationResult } from './results.js';
import { decide, type AttemptOutcome } from './retry-policy.js';
import { sleep } from './waiting.js';
import type { WriteBehinds } from './write-behind.js';

/** Thrown inside the p-retry loop to ask for a retry after `delayMs`. */
class RetryLater extends Error {
  /**
   * @param delayMs how long to wait before the next try
   * @param consumes `false` when nothing was sent (the claim is held elsewhere): no retry is spent
   */
  constructor(
    readonly delayMs: number,
    readonly consumes: boolean,
  ) {
    super(`retry in ${delayMs} ms`);
  }
}

/** The result (or typed error) of a record that is already settled. */
function fromSettled(ref: OperationRef, record: OperationRecord): OperationResult {
  if (record.result === null) {
    throw new JournalError(`${ref.method} ${ref.url} (Idempotency-Key ${ref.key}) is ${record.state} but has no stored result`, {
      hint: 'the journal record is incomplete; inspect it with `oncely pending`',
    });
  }
  if (record.state === OperationState.Succeeded) return toResult(ref.key, record.result, record.attempts, 'journal');
  throw finalError(ref, record.result);
}

/**
 * The snapshot a journal record stands for, when no send of it runs here.
 *
 * @internal
 */
export function snapshotOf(ref: OperationRef, record: OperationRecord, keyTtlMs: number): OperationSnapshot {
  if (record.state !== OperationState.Pending) {
    try {
      return { state: 'succeeded', result: fromSettled(ref, record) };
    } catch (error) {
      return { state: 'failed', error: error as OncelyError };
    }
  }
  if (isExpired(record, keyTtlMs)) return { state: 'expired', error: new ExpiredOperationError(ref, record.createdAt, keyTtlMs) };
  return record.submittedAt === null ? { state: 'prepared' } : { state: 'pending', retryAt: null, error: undefined };
}

async function loadRecord(options: ResolvedOptions, ref: OperationRef): Promise<OperationRecord> {
  const record = await options.journal.get(options.target('send()').scope, ref.key);
  if (record === undefined) {
    throw new JournalError(`${ref.method} ${ref.url} (Idempotency-Key ${ref.key}) is not in the journal`, {
      hint: 'it was pruned or the journal was replaced; prepare the operation again',
    });
  }
  return record;
}

/**
 * Throws a `JournalError` naming the row (`damaged` set) when the record is not what its
 * fingerprint says, or left the client's origin (see `../journal/integrity.ts`): nothing of it is sent.
 */
async function assertIntact(options: ResolvedOptions, ref: OperationRef, record: OperationRecord): Promise<void> {
  // Checked against the client's own scope: a journal handing back another scope's row gets it refused.
  const reason = await recordDamage(record, options.digest, options.target('send()').scope);
  if (reason === undefined) return;
  throw new JournalError(`${ref.method} ${ref.url} (Idempotency-Key ${ref.key}) was not sent: its journal row is damaged: ${reason}`, {
    hint: 'it is left as it is; client.pending() lists it',
    damaged: { scope: record.scope, key: record.key, reason },
  });
}

/**
 * A record `post()` has just created, handed to its first chain instead of read back, and
 * whether the journal created it holding this client's claim ({@link NewOperation.claim}).
 *
 * @internal
 */
export interface FreshRecord {
  readonly record: OperationRecord;
  readonly claimed: boolean;
}

/**
 * Runs one attempt chain of `ref` to its end (internal); `track` hears each state it passes, and
 * `behind` keeps the outcome written behind until the client's `close()` has seen it committed.
 *
 * @internal
 */
export async function runChain(
  options: ResolvedOptions,
  ref: OperationRef,
  unjournaled: Readonly<Record<string, string>>,
  signal: AbortSignal,
  track: (snapshot: OperationSnapshot) => void,
  behind: WriteBehinds | undefined,
  fresh?: FreshRecord,
): Promise<OperationResult> {
  const { journal, retry, ownerId, claimTtlMs, hooks } = options;
  const { scope } = options.target('send()');
  // A record this call has just created needs no read back: nothing else knows its key yet.
  const record = fresh?.record ?? (await loadRecord(options, ref));
  if (record.state !== OperationState.Pending) return fromSettled(ref, record);
  // Bytes read back are checked before they are sent (and before the row is written to): the
  // retries below send this checked record from memory. One the call just built needs none.
  if (fresh === undefined) await assertIntact(options, ref, record);
  if (isExpired(record, options.keyTtlMs)) throw new ExpiredOperationError(ref, record.createdAt, options.keyTtlMs);
  // The claim the record was created with (Journal.put's `claim`) stands for the first attempt's.
  let claimHeld = fresh?.claimed === true;
  // Whether no request under the key can have left any process but through this chain: this
  // chain has held the claim without a break since the record was created (post()) or submitted
  // (send() of a prepared one). Another holder (a resume() elsewhere, a process that died with
  // its request on the wire) may have sent it: then a refusal here says nothing of the outcome.
  let untouched = claimHeld;
  if (record.submittedAt === null) {
    // Claimed before it is marked submitted: from that write on, resume() elsewhere may take it up.
    claimHeld = await journal.claim(scope, ref.key, ownerId, claimTtlMs);
    // Read again under the claim: another holder (a tab sending the same prepared operation) may
    // have submitted it, and sent it, since it was read above.
    const current = claimHeld ? await loadRecord(options, ref) : record;
    if (current.state !== OperationState.Pending) return fromSettled(ref, current);
    untouched = claimHeld && current.submittedAt === null;
    // From here on the caller has asked for it: a crash before or during the first attempt must
    // leave it for resume(), which skips operations that were only prepared.
    if (current.submittedAt === null) await journal.update(scope, ref.key, { submittedAt: Date.now() });
  }
  const started = Date.now();
  let attempts = record.attempts;
  // Claims are refreshed at every attempt; this keeps them alive through long Retry-After waits.
  // A failed refresh only lets another process take over, which the server's dedupe absorbs; it
  // ends `untouched`, as does any claim this chain is refused.
  const claimOwn = async (): Promise<boolean> => {
    const held = await journal.claim(scope, ref.key, ownerId, claimTtlMs).catch((error: unknown) => {
      untouched = false;
      throw error;
    });
    if (!held) untouched = false;
    return held;
  };
  const refresh = (): void => void claimOwn().catch(() => undefined);
  const keepAlive = setInterval(refresh, Math.max(50, claimTtlMs / 3));
  (keepAlive as { unref?: () => void }).unref?.();

  const toLive = (report: ResponseReport): StoredResult => ({
    status: report.outcome.status,
    headers: report.headers,
    body: report.body,
    replayed: isReplay(report.headers),
  });
  let settled = false;
  const settle = async (report: ResponseReport): Promise<OperationResult> => {
    const { status } = report.outcome;
    // The caller gets the whole response; the journal gets it without secrets and capped. The
    // attempt count rides on the same write: one journal transaction per settling attempt.
    const live = toLive(report);
    const succeeded = status >= 200 && status < 300;
    const state = succeeded ? OperationState.Succeeded : OperationState.Failed;
    const patch = { attempts, lastStatus: status, state, result: toStorable(live, options.maxBodyBytes) };
    // The outcome is in hand: its write need not delay the caller where the journal can order it
    // before every later call (Journal.updateLater). Until it commits the record is pending and
    // claimed by this process; if the process dies first, or the write fails, resume() sends it
    // again under its key and the server replays its stored response: the same outcome, one effect.
    // close() waits for it (see write-behind.ts).
    if (behind) void behind.write(scope, ref.key, patch);
    else await journal.update(scope, ref.key, patch);
    settled = true;
    hooks.onSettled?.({ ...ref, state, status, replayed: live.replayed, attempts });
    if (succeeded) return toResult(ref.key, live, attempts, 'response');
    throw new AbortError(finalError(ref, live));
  };

  /** Attempts this chain started (`attempts` counts those that got as far as an outcome). */
  let sent = 0;
  // Nothing can leave the process: a final local answer, never "outcome unknown". Settled as
  // failed only when no attempt can have been sent, by this chain or any other holder of the
  // claim (`untouched`); otherwise the server may have applied one.
  const refuse = async (reason: string): Promise<RequestRefusedError> => {
    const never = untouched && sent === 0;
    if (never) {
      const stored: StoredResult = { status: 0, headers: {}, body: reason, replayed: false };
      await journal.update(scope, ref.key, { state: OperationState.Failed, result: stored });
      settled = true;
    }
    return new RequestRefusedError(ref, reason, never);
  };

  const attempt = async (): Promise<OperationResult> => {
    let outcome: AttemptOutcome;
    let report: AttemptReport | undefined;
    const claimed = claimHeld || (await claimOwn());
    claimHeld = false;
    if (claimed) {
      const headers = { ...(await options.headers()), ...record.headers, ...unjournaled, 'idempotency-key': ref.key };
      const refused = checkHeaders(headers);
      if (refused !== undefined) throw new AbortError(await refuse(`a header cannot be sent (${refused})`));
      sent += 1;
      track({ state: 'sending', elsewhere: false });
      hooks.onAttempt?.({ ...ref, attempt: sent });
      report = await tracedAttempt(options.traceAttempt, record.method, record.url, sent, () =>
        sendAttempt({
          method: record.method,
          url: record.url,
          headers,
          body: record.body,
          timeoutMs: options.timeoutMs,
          signal,
          fetch: options.fetch,
        }),
      );
      outcome = report.outcome;
      attempts += 1;
    } else {
      const current = await loadRecord(options, ref);
      if (current.state !== OperationState.Pending) return fromSettled(ref, current);
      track({ state: 'sending', elsewhere: true });
      outcome = { kind: 'claimed-elsewhere' };
    }
    const now = Date.now();
    const elapsedMs = now - started;
    const decision = decide(outcome, sent, { retry, ref, elapsedMs, totalAttempts: attempts, now, random: Math.random });
    // decide() settles only on a response, so the report is a ResponseReport here.
    if (decision.action === 'settle') return settle(report as ResponseReport);
    if (report !== undefined) {
      const lastStatus = outcome.kind === 'response' ? { lastStatus: outcome.status } : {};
      await journal.update(scope, ref.key, { attempts, ...lastStatus });
    }
    // After the journal has the attempt: a hook that throws stops the operation, pending.
    if (outcome.kind === 'network') hooks.onUnanswered?.({ ...ref, attempt: sent, error: outcome.error });
    if (decision.action === 'fail') throw new AbortError(decision.error);
    if (decision.action === 'reject') throw new AbortError(finalError(ref, toLive(report as ResponseReport)));
    const status = outcome.kind === 'response' ? outcome.status : undefined;
    const error = outcome.kind === 'network' ? outcome.error : undefined;
    if (outcome.kind !== 'claimed-elsewhere') hooks.onRetry?.({ ...ref, attempt: sent, delayMs: decision.delayMs, status, error });
    const retryAt = now + decision.delayMs;
    // An answer that asks to wait says the outcome is known not to be final yet; no answer says nothing.
    if (status !== undefined) track({ state: 'waiting', retryAt, status });
    else if (outcome.kind === 'network') track({ state: 'pending', retryAt, error });
    throw new RetryLater(decision.delayMs, outcome.kind !== 'claimed-elsewhere');
  };

  try {
    return await pRetry(attempt, {
      // decide() enforces the limit and the budget; p-retry's own limit is only a backstop.
      retries: retry.limit,
      minTimeout: 0,
      signal,
      shouldRetry: ({ error }) => error instanceof RetryLater,
      shouldConsumeRetry: ({ error }) => !(error instanceof RetryLater) || error.consumes,
      onFailedAttempt: async ({ error }) => {
        if (error instanceof RetryLater) await sleep(error.delayMs, signal);
      },
    });
  } finally {
    clearInterval(keepAlive);
    // A claim only ever keeps others off a pending operation: a settled one needs no release.
    if (!settled) await journal.release(scope, ref.key, ownerId).catch(() => undefined);
  }
}

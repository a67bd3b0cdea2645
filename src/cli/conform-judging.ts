/**
 * What every `oncely conform` check is made of: its shape, what it is given, and the readings
 * of an answer that the checks share (is it a replay, which resource is it, do two answers
 * match).
 *
 * @module
 */
import { BODY_CAP_BYTES } from './conform-body.js';
import { header, type Answer, type Sender } from './conform-http.js';

/** How a check came out. `n/a`: it could not run against this endpoint (its option not given), or its pass would show nothing about it. */
export const Verdict = { Pass: 'pass', Fail: 'fail', NotApplicable: 'n/a' } as const;
/** One of {@link Verdict}. */
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** What the checks may use, fixed for a run. */
export interface CheckSetup {
  readonly concurrency: number;
  readonly hasCallerB: boolean;
  readonly faultHeader: { readonly name: string; readonly value: string } | undefined;
  readonly slowTemplate: string | undefined;
}

/** What a running check is given. */
export interface CheckContext extends CheckSetup {
  readonly sender: Sender;
  readonly template: string;
  /** A value no other request of this run has used (for the body's `{{unique}}`). */
  unique(): string;
  /** A key no other request of this run has used. */
  key(): string;
  /** Waits `ms`; rejects at once when the run is stopped (its deadline passed), so no check outlives the run. */
  sleep(ms: number): Promise<void>;
}

/** A check's plan: at most how many requests it sends and resources it creates, or why it does not apply. */
export type CheckPlan = { readonly requests: number; readonly mayCreate: number } | { readonly notApplicable: string };

/** What a check found. */
export interface Finding {
  readonly verdict: Verdict;
  /** What the endpoint did, in a sentence. */
  readonly observed: string;
  /**
   * What this check saw of deduplication: a request repeated under its key named the first one's
   * resource (`true`) or a new one (`false`); absent when it did not see either.
   */
  readonly keyHonoured?: boolean | undefined;
  /**
   * Set on a pass that an endpoint ignoring keys would earn just the same: why it then shows
   * nothing. The run reports it `n/a` unless some check saw a key honoured.
   */
  readonly vacuousIfKeysIgnored?: string;
}

/** One black-box check. */
export interface Check {
  readonly id: string;
  /** What it sends, in a few words. */
  readonly title: string;
  /** What the IETF draft or the design article says should happen. */
  readonly expected: string;
  plan(setup: CheckSetup): CheckPlan;
  /** Sends its requests and judges the answers; `answers` collects every answer, to count what was created. */
  run(context: CheckContext, answers: Answer[]): Promise<Finding>;
}

/**
 * A passing finding.
 *
 * @example
 * ```ts
 * return pass('201, then the same 201 byte for byte');
 * ```
 */
export const pass = (observed: string): Finding => ({ verdict: Verdict.Pass, observed });

/**
 * A failing finding.
 *
 * @example
 * ```ts
 * return fail('executed twice: two resources');
 * ```
 */
export const fail = (observed: string): Finding => ({ verdict: Verdict.Fail, observed });

/**
 * Whether the endpoint marked `answer` as a replay (`Idempotency-Replay: true`, or Stripe's
 * `Idempotent-Replayed: true`).
 *
 * @example
 * ```ts
 * if (isMarkedReplay(second)) notes.push('marked as a replay');
 * ```
 */
export function isMarkedReplay(answer: Answer): boolean {
  return header(answer, 'idempotency-replay')?.toLowerCase() === 'true' || header(answer, 'idempotent-replayed')?.toLowerCase() === 'true';
}

/**
 * Which resource a successful answer names: its `Location`, else its JSON body's `id`, else its
 * body's text (two answers with the same identity are one resource, told twice).
 *
 * @example
 * ```ts
 * new Set(successes.map(identity)).size; // resources created
 * ```
 */
export function identity(answer: Answer): string {
  const location = header(answer, 'location');
  if (location !== undefined) return `Location ${location}`;
  try {
    const id = (JSON.parse(answer.body) as { id?: unknown } | null)?.id;
    if (typeof id === 'string' || typeof id === 'number') return `id ${String(id)}`;
  } catch {
    // Not JSON: the body itself names the resource.
  }
  return answer.truncated ? `body of ${answer.bytes} bytes, SHA-256 ${answer.digest}` : `body ${answer.body}`;
}

/**
 * Whether two answers' bodies are the same bytes: compared by length and SHA-256, as neither
 * is held whole when it is over the cap.
 *
 * @example
 * ```ts
 * if (!sameBody(faulty, retry)) notes.push('the retry got another body');
 * ```
 */
export const sameBody = (a: Answer, b: Answer): boolean => a.bytes === b.bytes && a.digest === b.digest;

/**
 * How a body over the cap was compared, for a finding's sentence; empty for a body held whole.
 *
 * @example
 * ```ts
 * pass(`the same 201 byte for byte${bodySizeNote(first)}`);
 * ```
 */
export function bodySizeNote(answer: Answer): string {
  return answer.truncated ? ` (${answer.bytes} bytes, over the ${BODY_CAP_BYTES}-byte cap: compared by length and SHA-256)` : '';
}

/**
 * What a request repeated under its key shows of deduplication: `true` when it named the first
 * one's resource or was refused as a duplicate (`409` in progress, `422` another payload: the
 * key was seen), `false` when it made a new resource, `undefined` when it shows neither.
 *
 * @example
 * ```ts
 * return { ...pass('replayed'), keyHonoured: keyHonouredBy(first, second) };
 * ```
 */
export function keyHonouredBy(first: Answer, repeat: Answer): boolean | undefined {
  if (isSuccess(repeat)) return identity(repeat) === identity(first);
  return repeat.status === 409 || repeat.status === 422 ? true : undefined;
}

/**
 * Whether `answer` is a success (2xx).
 *
 * @example
 * ```ts
 * if (!isSuccess(first)) return notAccepted(first);
 * ```
 */
export const isSuccess = (answer: Answer): boolean => answer.status >= 200 && answer.status < 300;

/**
 * Resources the successful answers among `answers` name, at most (distinct identities).
 *
 * @example
 * ```ts
 * createdBy(answers); // 1 when every success named the same payment
 * ```
 */
export function createdBy(answers: readonly Answer[]): number {
  return new Set(answers.filter(isSuccess).map(identity)).size;
}

/**
 * An answer in a few words: its status, a marker if any, and the problem `type` or a body
 * excerpt for a refusal.
 *
 * @example
 * ```ts
 * brief(answer); // '409 (Retry-After: 1)'
 * ```
 */
export function brief(answer: Answer): string {
  const notes: string[] = [];
  if (isMarkedReplay(answer)) notes.push('marked as a replay');
  const retryAfter = header(answer, 'retry-after');
  if (retryAfter !== undefined) notes.push(`Retry-After: ${retryAfter}`);
  if (!isSuccess(answer)) {
    const reason = refusalReason(answer.body);
    if (reason !== '') notes.push(reason);
  }
  return notes.length === 0 ? String(answer.status) : `${answer.status} (${notes.join('; ')})`;
}

/** A refusal's reason in a few words: a problem's `type` (its last segment) or an `error`/`message`, else the body's start. */
function refusalReason(body: string): string {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown> | null;
    const type = parsed?.['type'];
    if (typeof type === 'string' && type !== 'about:blank') return type.slice(type.lastIndexOf('/') + 1);
    const said = [parsed?.['title'], parsed?.['error'], parsed?.['message']].find((value) => typeof value === 'string');
    if (typeof said === 'string') return JSON.stringify(said.length > 50 ? `${said.slice(0, 47)}...` : said);
  } catch {
    // Not JSON: its text says why.
  }
  const text = body.replace(/\s+/g, ' ').trim();
  if (text.startsWith('<')) return 'an HTML page';
  return text.length > 50 ? `${text.slice(0, 47)}...` : text;
}

/**
 * How `replay` differs from `original` where a replay must not: status, body bytes, and the
 * `Content-Type` and `Location` headers. Empty when it is a faithful replay.
 *
 * @example
 * ```ts
 * const differences = replayDifferences(first, second);
 * if (differences.length > 0) return fail(`the second answer differs: ${differences.join('; ')}`);
 * ```
 */
export function replayDifferences(original: Answer, replay: Answer): string[] {
  const differences: string[] = [];
  if (original.status !== replay.status) differences.push(`status ${original.status} then ${replay.status}`);
  const same = sameBody(original, replay);
  if (!same) {
    const [a, b] = [identity(original), identity(replay)];
    differences.push(a === b ? `body not byte-identical (${original.bytes} then ${replay.bytes} bytes)` : `another resource (${a} then ${b})`);
  }
  for (const name of ['content-type', 'location']) {
    const [a, b] = [header(original, name), header(replay, name)];
    if (a !== b && !(!same && name === 'location')) differences.push(`${name} ${a ?? '(none)'} then ${b ?? '(none)'}`);
  }
  return differences;
}

/**
 * The finding for a first request the endpoint did not accept: nothing else in the check can be
 * judged, and the body template or the credentials are the likely cause.
 *
 * @example
 * ```ts
 * if (!isSuccess(first)) return notAccepted(first);
 * ```
 */
export function notAccepted(answer: Answer): Finding {
  return fail(`the first request was not accepted: ${brief(answer)}; nothing else could be judged (check --body and the credentials)`);
}

/**
 * Says how `answer` marks a replay, for the "what the endpoint did" column.
 *
 * @example
 * ```ts
 * `replayed, ${markerNote(second)}`; // 'replayed, marked (Idempotency-Replay: true)'
 * ```
 */
export function markerNote(answer: Answer): string {
  if (header(answer, 'idempotency-replay') !== undefined) return `marked (Idempotency-Replay: ${header(answer, 'idempotency-replay')})`;
  if (header(answer, 'idempotent-replayed') !== undefined) return `marked (Idempotent-Replayed: ${header(answer, 'idempotent-replayed')})`;
  return 'not marked as a replay';
}

/**
 * The checks of `oncely conform` about repeated requests: a sequential replay, a concurrent
 * burst, a key reused with another body, the same body written differently, two callers, a
 * transient answer, and a duplicate while the first is in flight. The checks on the key header
 * itself are in `conform-key-checks.ts`.
 *
 * Each check uses keys and `{{unique}}` values of its own, so no check sees another's requests.
 *
 * @module
 */
import { fill, header, reorderedText, respacedText, type Answer } from './conform-http.js';
import { KEY_CHECKS } from './conform-key-checks.js';
import {
  bodySizeNote,
  brief,
  fail,
  identity,
  isMarkedReplay,
  isSuccess,
  keyHonouredBy,
  markerNote,
  notAccepted,
  pass,
  replayDifferences,
  sameBody,
  Verdict,
  type Check,
  type Finding,
} from './conform-judging.js';

/** How long after the slow request the in-flight duplicate goes out. */
const IN_FLIGHT_DELAY_MS = 100;

const replay: Check = {
  id: 'replay',
  title: 'same key, same body, sequential',
  expected: 'the stored response again: same status, byte-identical body, same Content-Type and Location (article: "return the stored response verbatim")',
  plan: () => ({ requests: 2, mayCreate: 1 }),
  async run({ sender, template, unique, key }, answers) {
    const outgoing = { key: key(), body: fill(template, unique()) };
    const first = await sender.send(outgoing);
    answers.push(first);
    if (!isSuccess(first)) return notAccepted(first);
    const second = await sender.send(outgoing);
    answers.push(second);
    const keyHonoured = keyHonouredBy(first, second);
    const differences = replayDifferences(first, second);
    if (differences.length > 0) return { ...fail(`the second answer differs: ${differences.join('; ')}`), keyHonoured };
    return { ...pass(`${first.status}, then the same ${second.status} byte for byte${bodySizeNote(second)}, ${markerNote(second)}`), keyHonoured };
  },
};

/**
 * What a burst under one key shows of deduplication: a second resource (`false`), or a duplicate
 * told apart from the first success, replayed or refused (`true`).
 */
function burstKeyHonoured(answers: readonly Answer[]): boolean | undefined {
  const first = answers.find(isSuccess);
  if (first === undefined) return undefined;
  if (answers.some((answer) => isSuccess(answer) && identity(answer) !== identity(first))) return false;
  return answers.some((answer) => answer !== first && keyHonouredBy(first, answer) === true) || undefined;
}

const concurrent: Check = {
  id: 'concurrent',
  title: 'N identical requests at once',
  expected:
    'one resource (the same id / Location in every success); the others replays or 409 with Retry-After; never a second resource, never a 5xx (draft: 409 while in progress)',
  plan: ({ concurrency }) => ({ requests: concurrency + 1, mayCreate: 1 }),
  async run({ sender, template, unique, key, concurrency, sleep }, answers) {
    const outgoing = { key: key(), body: fill(template, unique()) };
    const settled = await Promise.allSettled(Array.from({ length: concurrency }, () => sender.send(outgoing)));
    const burst = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    answers.push(...burst);
    const problems: string[] = [];
    const lost = settled.length - burst.length;
    if (lost > 0) problems.push(`${lost} got no answer (connection closed or timed out)`);
    const counts = new Map<string, number>();
    for (const answer of burst) {
      const label = isSuccess(answer) && isMarkedReplay(answer) ? `${answer.status} replay` : String(answer.status);
      counts.set(label, (counts.get(label) ?? 0) + 1);
      if (answer.status >= 500) problems.push(`a ${brief(answer)}`);
      else if (answer.status === 409 && header(answer, 'retry-after') === undefined) problems.push('a 409 without Retry-After');
      else if (!isSuccess(answer) && answer.status !== 409) problems.push(`a ${brief(answer)}`);
    }
    // After the burst the key has a final answer: one more request must name the same resource.
    let followUp = await sender.send(outgoing);
    for (let wait = 0; followUp.status === 409 && wait < 3; wait += 1) {
      await sleep(Math.min(5, Number(header(followUp, 'retry-after') ?? 1) || 1) * 1000);
      followUp = await sender.send(outgoing);
    }
    answers.push(followUp);
    if (!isSuccess(followUp)) problems.push(`the request after the burst got ${brief(followUp)}`);
    const resources = new Set([...burst, followUp].filter(isSuccess).map(identity));
    if (resources.size > 1) problems.unshift(`a second resource: ${[...resources].slice(0, 3).join(', ')}${resources.size > 3 ? ', ...' : ''}`);
    const tally = [...counts].map(([label, count]) => `${count} x ${label}`).join(', ');
    const summary = `${concurrency} at once: ${tally}; after: ${brief(followUp)}; ${resources.size} resource${resources.size === 1 ? '' : 's'}`;
    const finding = problems.length > 0 ? fail(`${summary}. ${[...new Set(problems)].join('; ')}`) : pass(summary);
    return { ...finding, keyHonoured: burstKeyHonoured([...burst, followUp]) };
  },
};

const reusedKey: Check = {
  id: 'reuse-other-body',
  title: 'same key, another body',
  expected: '422 (draft: "SHOULD reply with 422" to a key reused with another payload), nothing created, the first response intact',
  plan: () => ({ requests: 3, mayCreate: 1 }),
  async run({ sender, template, unique, key }, answers) {
    const reused = key();
    const original = { key: reused, body: fill(template, unique()) };
    const first = await sender.send(original);
    answers.push(first);
    if (!isSuccess(first)) return notAccepted(first);
    const other = await sender.send({ key: reused, body: fill(template, unique()) });
    answers.push(other);
    if (isSuccess(other)) {
      const same = identity(other) === identity(first);
      return fail(`answered ${brief(other)} to another body under the same key: ${same ? "the first request's response" : 'a second resource'}`);
    }
    if (other.status >= 500 || other.status === 401 || other.status === 403) return fail(`answered ${brief(other)} to another body under the same key`);
    const again = await sender.send(original);
    answers.push(again);
    const differences = replayDifferences(first, again);
    if (differences.length > 0)
      return fail(`refused the other body with ${other.status}, but the first body again got another answer: ${differences.join('; ')}`);
    const refusal = other.status === 422 ? '422' : `${other.status} (the draft says 422)`;
    return pass(`refused with ${refusal}; the first body again got its own response`);
  },
};

/** Sends a body, then the same JSON value as `variant` under the same key: one request or two? */
function sameValue(id: string, title: string, variant: (text: string) => string | undefined, what: string): Check {
  return {
    id,
    title,
    expected: `the same request: replayed, not 422 and not executed again (in JSON, ${what} carries no meaning: RFC 8259)`,
    plan: () => ({ requests: 2, mayCreate: 1 }),
    async run({ sender, template, unique, key }, answers): Promise<Finding> {
      const text = fill(template, unique());
      const changed = variant(text);
      if (changed === undefined) return { verdict: Verdict.NotApplicable, observed: `the --body has no object with two members to reorder` };
      const used = key();
      const first = await sender.send({ key: used, body: text });
      answers.push(first);
      if (!isSuccess(first)) return notAccepted(first);
      const second = await sender.send({ key: used, body: changed });
      answers.push(second);
      if (!isSuccess(second)) return fail(`treated as another request: ${brief(second)}`);
      if (identity(second) !== identity(first)) return fail(`executed again: ${identity(first)} then ${identity(second)}`);
      const differences = replayDifferences(first, second);
      return differences.length > 0 ? fail(`answered differently: ${differences.join('; ')}`) : pass(`replayed (${second.status}, ${markerNote(second)})`);
    },
  };
}

const twoCallers: Check = {
  id: 'two-callers',
  title: 'two callers, same key',
  expected:
    "two independent resources: keys are scoped per caller; no replay across callers, no leak of the other caller's response (article: unique on (client_id, key))",
  plan: ({ hasCallerB }) => (hasCallerB ? { requests: 3, mayCreate: 2 } : { notApplicable: 'needs a second caller: --token-b or --header-b' }),
  async run({ sender, template, unique, key }, answers) {
    const shared = key();
    const [valueA, valueB] = [unique(), unique()];
    const a = { key: shared, body: fill(template, valueA), caller: 'a' as const };
    const first = await sender.send(a);
    answers.push(first);
    if (!isSuccess(first)) return notAccepted(first);
    const b = await sender.send({ key: shared, body: fill(template, valueB), caller: 'b' });
    answers.push(b);
    if (!isSuccess(b)) return fail(`caller B was refused under caller A's key: ${brief(b)} (the key space is shared across callers)`);
    if (b.body.includes(valueA)) return fail("caller B got caller A's response (a replay across callers: a leak)");
    if (identity(b) === identity(first)) return fail(`caller B got caller A's resource (${identity(b)})`);
    const again = await sender.send(a);
    answers.push(again);
    if (again.body.includes(valueB)) return fail("caller A's retry got caller B's response (a leak)");
    const differences = replayDifferences(first, again);
    if (differences.length > 0) return fail(`caller A's retry after B's request got another answer: ${differences.join('; ')}`);
    return pass(`A ${first.status}, B ${b.status} with its own resource${isMarkedReplayNote(b)}, A's retry replayed its own`);
  },
};

function isMarkedReplayNote(answer: Answer): string {
  return markerNote(answer).startsWith('marked') ? ` but ${markerNote(answer)}` : '';
}

const transient: Check = {
  id: 'transient',
  title: 'a transient answer, then a retry',
  expected: 'the transient answer (5xx, 429) is not stored: the retry runs afresh (article: "transient failures are not results")',
  plan: ({ faultHeader }) =>
    faultHeader === undefined ? { notApplicable: 'needs --fault-header, a header that makes the endpoint fail transiently' } : { requests: 2, mayCreate: 1 },
  async run({ sender, template, unique, key, faultHeader }, answers) {
    const outgoing = { key: key(), body: fill(template, unique()) };
    const faulty = await sender.send({ ...outgoing, extra: faultHeader === undefined ? {} : { [faultHeader.name]: faultHeader.value } });
    answers.push(faulty);
    if (faulty.status < 500 && faulty.status !== 429) return fail(`--fault-header did not cause a transient answer: ${brief(faulty)}`);
    const retry = await sender.send(outgoing);
    answers.push(retry);
    if (retry.status === faulty.status && sameBody(retry, faulty))
      return fail(`${faulty.status}, then the same ${brief(retry)} again: the transient answer was stored`);
    if (!isSuccess(retry)) return fail(`${faulty.status}, then ${brief(retry)}: the retry did not run`);
    return {
      ...pass(`${faulty.status}, then the retry ran: ${brief(retry)}`),
      vacuousIfKeysIgnored: 'an endpoint that stores nothing runs every retry, after a transient answer or not',
    };
  },
};

const inFlight: Check = {
  id: 'in-flight',
  title: 'a duplicate while the first is in flight',
  expected: "409 with Retry-After while the first is in progress (draft: 409), or the first one's response once it is stored; never a second execution",
  plan: ({ slowTemplate }) =>
    slowTemplate === undefined ? { notApplicable: 'needs --slow-body, a body the endpoint takes a while to answer' } : { requests: 2, mayCreate: 1 },
  async run({ sender, slowTemplate, unique, key, sleep }, answers) {
    const outgoing = { key: key(), body: fill(slowTemplate ?? '', unique()) };
    const firstPromise = sender.send(outgoing);
    await sleep(IN_FLIGHT_DELAY_MS);
    const [second, first] = await Promise.all([sender.send(outgoing), firstPromise]);
    answers.push(first, second);
    const [earlier, later] = first.sentAt <= second.sentAt ? [first, second] : [second, first];
    if (earlier.doneAt <= later.sentAt) {
      return {
        verdict: Verdict.NotApplicable,
        observed: `the slow body was answered before the duplicate went out (${Math.round(earlier.doneAt - earlier.sentAt)} ms): make --slow-body slower`,
      };
    }
    const successes = [first, second].filter(isSuccess);
    if (successes.length === 0) return fail(`${brief(first)} and ${brief(second)}: neither succeeded`);
    if (successes.length === 2) {
      const differences = replayDifferences(first, second);
      return differences.length > 0
        ? fail(`both succeeded: ${differences.join('; ')}`)
        : pass(`held until the first finished, then its response (${markerNote(second)})`);
    }
    const other = isSuccess(first) ? second : first;
    if (other.status !== 409) return fail(`the duplicate got ${brief(other)}`);
    return header(other, 'retry-after') === undefined ? fail('409 without Retry-After') : pass(`${brief(other)} while the first was in flight`);
  },
};

/** Every check, in the order they run and are reported. */
export const CHECKS: readonly Check[] = [
  replay,
  concurrent,
  reusedKey,
  sameValue('reordered', 'same body, members reordered', reorderedText, 'member order'),
  sameValue('whitespace', 'same body, whitespace changed', respacedText, 'insignificant whitespace'),
  ...KEY_CHECKS,
  twoCallers,
  transient,
  inFlight,
];

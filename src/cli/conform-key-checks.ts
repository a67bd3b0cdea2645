/**
 * The checks of `oncely conform` on the `Idempotency-Key` header itself: missing, empty, too
 * long, bad characters, sent twice, and the draft's own sf-string form.
 *
 * The draft (draft-ietf-httpapi-idempotency-key-header, -07 on) makes the key an RFC 8941 String,
 * `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`, and a missing or malformed key a
 * `400`; the design article adds a maximum length and a restricted character set, checked at the
 * edge. Only the sf-string form and a key the endpoint accepts may create anything.
 *
 * @module
 */
import { fill } from './conform-http.js';
import { brief, fail, isMarkedReplay, isSuccess, notAccepted, pass, replayDifferences, type Check, type Finding } from './conform-judging.js';
import type { Answer } from './conform-http.js';

/** Longer than any limit the draft's examples or the common APIs (255, 256) allow. */
const TOO_LONG = 1024;

/** A refusal as the draft wants it (`400`), or another 4xx said as such; a success or a 5xx fails. */
function refused(answer: Answer): Finding {
  if (answer.status === 400) return pass(brief(answer));
  if (answer.status >= 400 && answer.status < 500 && answer.status !== 401 && answer.status !== 403) return pass(`${brief(answer)} (the draft says 400)`);
  return fail(isSuccess(answer) ? `accepted: ${brief(answer)}` : brief(answer));
}

/** A check that sends `keys` one request each, and wants every one refused. */
function refusedKeys(id: string, title: string, expected: string, keys: (length: number) => ReadonlyArray<readonly [string, string]>): Check {
  return {
    id,
    title,
    expected,
    plan: () => ({ requests: keys(TOO_LONG).length, mayCreate: keys(TOO_LONG).length }),
    async run({ sender, template, unique }, answers) {
      const findings: Array<readonly [string, Finding]> = [];
      for (const [label, key] of keys(TOO_LONG)) {
        const answer = await sender.send({ key, body: fill(template, unique()) });
        answers.push(answer);
        findings.push([label, refused(answer)]);
      }
      const observed = findings.map(([label, finding]) => (findings.length > 1 ? `${label}: ${finding.observed}` : finding.observed)).join('; ');
      return findings.every(([, finding]) => finding.verdict === 'pass') ? pass(observed) : fail(observed);
    },
  };
}

const missing: Check = {
  id: 'key-missing',
  title: 'no Idempotency-Key header',
  expected: '400 where the key is required (draft: "SHOULD reply with 400"), or accepted where it is optional; never a 5xx',
  plan: () => ({ requests: 1, mayCreate: 1 }),
  async run({ sender, template, unique }, answers) {
    const answer = await sender.send({ body: fill(template, unique()) });
    answers.push(answer);
    if (isSuccess(answer))
      return {
        ...pass(`accepted without a key: ${brief(answer)} (the key is optional here)`),
        vacuousIfKeysIgnored: 'an endpoint that ignores keys accepts a request without one like any other',
      };
    return refused(answer);
  },
};

const twoHeaders: Check = {
  id: 'key-two-headers',
  title: 'two Idempotency-Key headers, then the first alone',
  expected: '400 (an sf-string is one value: two header lines make an invalid field), nothing stored: the first key then still runs afresh',
  plan: () => ({ requests: 2, mayCreate: 2 }),
  async run({ sender, template, unique, key }, answers) {
    const [one, two] = [key(), key()];
    const body = fill(template, unique());
    const both = await sender.send({ key: [one, two], body });
    answers.push(both);
    const verdict = refused(both);
    const alone = await sender.send({ key: one, body });
    answers.push(alone);
    if (verdict.verdict !== 'pass') return fail(`${verdict.observed} for two keys; the first alone then got ${brief(alone)}`);
    if (!isSuccess(alone)) return fail(`${verdict.observed}, but the first key alone then got ${brief(alone)}`);
    if (isMarkedReplay(alone)) return fail(`${verdict.observed}, but the first key alone then got a replay: the refused request was stored`);
    return pass(`${verdict.observed}; the first key alone then ran: ${brief(alone)}`);
  },
};

const sfString: Check = {
  id: 'key-sf-string',
  title: 'the key as a quoted sf-string, twice',
  expected: 'accepted, and the second one replayed: the draft defines the key as an RFC 8941 String ("...")',
  plan: () => ({ requests: 2, mayCreate: 1 }),
  async run({ sender, template, unique, key }, answers) {
    const outgoing = { key: `"${key()}"`, body: fill(template, unique()) };
    const first = await sender.send(outgoing);
    answers.push(first);
    if (!isSuccess(first))
      return first.status >= 400 && first.status < 500 && first.status !== 401 && first.status !== 403
        ? fail(`refused the draft's form: ${brief(first)}`)
        : notAccepted(first);
    const second = await sender.send(outgoing);
    answers.push(second);
    const differences = replayDifferences(first, second);
    return differences.length > 0 ? fail(`accepted, but the second one differs: ${differences.join('; ')}`) : pass(`accepted (${first.status}), then replayed`);
  },
};

/** The key-header checks, in the order they run. */
export const KEY_CHECKS: readonly Check[] = [
  missing,
  refusedKeys(
    'key-empty',
    'an empty Idempotency-Key',
    '400: an empty value is no sf-string, so the field counts as missing (draft: missing key, 400); nothing stored',
    () => [['empty', '']],
  ),
  refusedKeys('key-too-long', `a ${TOO_LONG}-character key`, '400 (article: "enforce a maximum length ... reject anything else with 400")', (length) => [
    ['too long', 'k'.repeat(length)],
  ]),
  refusedKeys('key-bad-characters', 'keys with a space, and with UTF-8', '400 (draft: not an sf-string; article: "a restricted charset at the edge")', () => [
    ['space', 'bad key'],
    // Sent as its UTF-8 bytes: the sender writes a header string's Latin-1 reading.
    ['UTF-8', Buffer.from('ключ', 'utf8').toString('latin1')],
  ]),
  twoHeaders,
  sfString,
];

/**
 * `oncely conform`'s one-line verdict, and the checks it reports `n/a` because their pass would
 * show nothing: against an API that ignores `Idempotency-Key` (every request a `201` and a new
 * resource), a request without a key is accepted and a retry after a `503` runs, as every request
 * does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { conformReport, idsWith, runConform } from './helpers/conform-run.js';
import { startFlawedEndpoint, type Flaws } from './helpers/flawed-endpoint.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function args(flaws: Flaws): Promise<string[]> {
  const endpoint = await startFlawedEndpoint(flaws);
  closers.push(endpoint.close);
  return [
    endpoint.url,
    '--body',
    '{"item":"book","quantity":1,"note":"{{unique}}"}',
    '--token',
    'caller-a',
    '--token-b',
    'caller-b',
    '--fault-header',
    'x-fault: 1',
    '--concurrency',
    '5',
  ];
}

describe('oncely conform: the verdict, and n/a for what cannot apply', () => {
  it('says an API that ignores keys does not deduplicate, and reports the missing-key and transient checks n/a, not pass', async () => {
    const { code, report } = await conformReport(await args({ ignoreKey: true }));
    expect(code).toBe(1);
    expect(report.verdict).toMatch(
      /^this API does not deduplicate by Idempotency-Key: a request repeated under its key ran again \("same key, same body, sequential", "N identical requests at once"\); \d+ checks failed$/,
    );
    expect(idsWith(report, 'pass')).toEqual([]);
    // in-flight is n/a for its own reason: no --slow-body.
    expect(idsWith(report, 'n/a')).toEqual(['key-missing', 'transient', 'in-flight']);
    for (const id of ['key-missing', 'transient'])
      expect(report.checks.find((check) => check.id === id)?.observed).toMatch(
        /^this API does not deduplicate by Idempotency-Key: an endpoint that .*, so its pass shows nothing \(it answered: /,
      );
  });

  it('prints the verdict as the line under the title', async () => {
    const run = await runConform(await args({ ignoreKey: true }));
    expect(run.stdout.split('\n').slice(0, 2)).toEqual([
      expect.stringMatching(/^oncely conform POST /),
      expect.stringMatching(/^verdict: this API does not deduplicate by Idempotency-Key: /),
    ]);
    expect(run.stdout).toMatch(/^no Idempotency-Key +.* +N\/A +1 +1$/m);
  });

  it('keeps those passes where keys are honoured: an optional key, accepted when absent, is a pass, and the run conforms', async () => {
    const { code, report } = await conformReport([...(await args({ optionalKey: true })), '--slow-body', '{"item":"book","slow":true,"note":"{{unique}}"}']);
    expect(code).toBe(0);
    expect(report.checks.find((check) => check.id === 'key-missing')).toMatchObject({
      verdict: 'pass',
      observed: expect.stringMatching(/^accepted without a key/),
    });
    expect(report.checks.find((check) => check.id === 'transient')?.verdict).toBe('pass');
    expect(report.verdict).toBe('conforms: every check that applies passed (0 n/a)');
  });

  it('keeps those passes where duplicates are refused (409, 422) rather than replayed: the key is honoured', async () => {
    // No repeat is ever answered 2xx: only the refusals show that the key was seen.
    const { report } = await conformReport(await args({ refuseReplays: true, workMs: 50 }));
    expect(report.checks.find((check) => check.id === 'transient')?.verdict).toBe('pass');
    expect(report.verdict).toMatch(/^\d+ checks failed$/);
  });

  it('counts the failed checks in the verdict of an API that deduplicates with a flaw', async () => {
    const { report } = await conformReport(await args({ rejectQuoted: true }));
    expect(report.verdict).toBe('1 check failed');
  });
});

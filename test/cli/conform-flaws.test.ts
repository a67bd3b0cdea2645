/**
 * `oncely conform` against a small endpoint broken one flaw at a time: every check passes
 * against the endpoint without flaws, and each check fails against the flaw it exists to catch
 * (a check that cannot fail proves nothing).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { conformReport, idsWith } from './helpers/conform-run.js';
import { startFlawedEndpoint, type Flaws } from './helpers/flawed-endpoint.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const TEMPLATE = '{"item":"book","quantity":1,"note":"{{unique}}"}';

async function check(flaws: Flaws): Promise<Awaited<ReturnType<typeof conformReport>>> {
  const endpoint = await startFlawedEndpoint(flaws);
  closers.push(endpoint.close);
  return conformReport([
    endpoint.url,
    '--body',
    TEMPLATE,
    '--token',
    'caller-a',
    '--token-b',
    'caller-b',
    '--fault-header',
    'x-fault: 1',
    '--slow-body',
    '{"item":"book","slow":true,"note":"{{unique}}"}',
    '--concurrency',
    '10',
  ]);
}

describe('oncely conform against an endpoint broken one flaw at a time', () => {
  it('passes every check against the endpoint without flaws, and counts what it sent and created', async () => {
    const { code, report } = await check({});
    expect(idsWith(report, 'fail')).toEqual([]);
    expect(idsWith(report, 'n/a')).toEqual([]);
    expect(code).toBe(0);
    expect(report.checks.find((c) => c.id === 'concurrent')).toMatchObject({ requests: 11, created: 1 });
    expect(report.checks.find((c) => c.id === 'two-callers')).toMatchObject({ requests: 3, created: 2 });
    expect(report.checks.find((c) => c.id === 'key-empty')).toMatchObject({ requests: 1, created: 0 });
    expect(report.requests).toBe(report.checks.reduce((sum, c) => sum + c.requests, 0));
  });

  const cases: ReadonlyArray<readonly [string, Flaws, readonly string[]]> = [
    [
      'an endpoint that ignores the key',
      { ignoreKey: true },
      [
        'replay',
        'concurrent',
        'reuse-other-body',
        'reordered',
        'whitespace',
        'key-empty',
        'key-too-long',
        'key-bad-characters',
        'key-two-headers',
        'key-sf-string',
        'two-callers',
        'in-flight',
      ],
    ],
    [
      'an endpoint that replays a re-serialised body',
      { rebuildReplay: true },
      ['replay', 'reuse-other-body', 'reordered', 'whitespace', 'key-sf-string', 'two-callers'],
    ],
    ['one key space for every caller', { sharedAcrossCallers: true }, ['two-callers']],
    ['one key space and no fingerprint: a replay across callers', { sharedAcrossCallers: true, noFingerprint: true }, ['reuse-other-body', 'two-callers']],
    ['an endpoint that answers a different body with the stored response', { noFingerprint: true }, ['reuse-other-body']],
    ['fingerprints over the raw bytes', { rawFingerprint: true }, ['reordered', 'whitespace']],
    ['any key accepted', { lenientKeys: true }, ['key-empty', 'key-too-long', 'key-bad-characters', 'key-two-headers']],
    ["the draft's quoted form refused", { rejectQuoted: true }, ['key-sf-string']],
    ['a 503 stored as the final answer', { storeTransient: true }, ['transient']],
    // Each execution lasts 150 ms, so the burst's duplicates find the first one in flight.
    ['409 without Retry-After', { no409RetryAfter: true, workMs: 150 }, ['concurrent', 'in-flight']],
    ['a 500 without a key', { crashWithoutKey: true }, ['key-missing']],
  ];
  it.each(cases)('fails exactly the checks that catch %s', async (_name, flaws, failing) => {
    const { code, report } = await check(flaws);
    expect(idsWith(report, 'fail')).toEqual(failing);
    expect(code).toBe(1);
  });

  it('fails a check whose endpoint cannot be reached, saying so, and exits 1', async () => {
    const endpoint = await startFlawedEndpoint();
    await endpoint.close();
    const { code, report } = await conformReport([endpoint.url, '--body', TEMPLATE, '--concurrency', '2']);
    expect(code).toBe(1);
    expect(report.checks[0]?.observed).toMatch(/^no answer: .*ECONNREFUSED/);
  });
});

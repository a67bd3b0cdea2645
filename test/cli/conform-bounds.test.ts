/**
 * `oncely conform`'s bounds against hostile loopback endpoints: `--timeout` is a request's whole
 * time (a body dripped a byte at a time is given up on), `--deadline` is the run's (an endpoint
 * that stops answering stops the run, which reports what it has), and a body is held to 1 MiB
 * and compared past that by length and SHA-256.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSender } from '../../src/cli/conform-http.js';
import { conformReport, runConform } from './helpers/conform-run.js';
import { bigDigest, created, drip, startHostileEndpoint, streamBig, type Behaviour } from './helpers/hostile-endpoint.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const TEMPLATE = '{"item":"book","note":"{{unique}}"}';
/** The documented cap on a body held in memory. */
const CAP = 1024 * 1024;
const BIG = 50_000_000;

async function endpoint(behaviour: Behaviour): Promise<string> {
  const started = await startHostileEndpoint(behaviour);
  closers.push(started.close);
  return started.url;
}

describe('oncely conform --timeout: the whole time of one request', () => {
  it('gives up on a body dripped a byte at a time, faster than the timeout, and fails the check it was in', async () => {
    // The first request (the replay check's) drips a byte every 50 ms: a socket timeout of 300 ms
    // would restart at each one and never fire.
    const url = await endpoint((res, { n, id }) => (n === 1 ? drip(res, 50) : created(res, id)));
    const { code, report } = await conformReport([url, '--body', TEMPLATE, '--timeout', '300ms', '--concurrency', '2']);
    const replay = report.checks.find((check) => check.id === 'replay');
    expect(replay?.verdict).toBe('fail');
    expect(replay?.observed).toMatch(/^no answer: no complete answer within 300 ms \(--timeout\): status 201 and \d+ bytes of the body had arrived$/);
    // The run went on to the other checks.
    expect(report.checks.map((check) => check.id)).toContain('in-flight');
    expect(code).toBe(1);
  }, 10_000);

  it('names the check that timed out in the printed table', async () => {
    const url = await endpoint((res, { n, id }) => (n === 1 ? drip(res, 50) : created(res, id)));
    const run = await runConform([url, '--body', TEMPLATE, '--timeout', '300ms', '--concurrency', '2']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^same key, same body, +.*no answer: no complete answer within 300 +FAIL +1 /m);
  }, 10_000);
});

describe('oncely conform --deadline: the whole time of the run', () => {
  it('stops a run whose endpoint stopped answering, reports what it has, names the check it was in, and exits 1', async () => {
    // Two answers (the replay check), then nothing: the burst's requests hang.
    const url = await endpoint((res, { n, id }) => (n <= 2 ? created(res, id) : undefined));
    const { code, report } = await conformReport([url, '--body', TEMPLATE, '--deadline', '500ms', '--concurrency', '2']);
    expect(code).toBe(1);
    expect(report.checks.map((check) => check.id)).toEqual(['replay', 'concurrent']);
    expect(report.checks[0]?.verdict).toBe('pass');
    expect(report.checks[1]).toMatchObject({ verdict: 'fail', requests: 2 });
    expect(report.checks[1]?.observed).toMatch(/^stopped: the run's --deadline of 500ms passed during this check/);
    expect(report.stoppedIn).toBe('concurrent');
    expect(report.verdict).toMatch(/^stopped: the run's --deadline of 500ms passed during "N identical requests at once"; \d+ checks not run, 1 failed$/);
    expect(report.notRun).toContain('reuse-other-body');
    expect(report.notRun).toContain('in-flight');
  }, 10_000);

  it('names the check it stopped in, and the checks not run, in the printed report', async () => {
    const url = await endpoint(() => undefined);
    const run = await runConform([url, '--body', TEMPLATE, '--deadline', '300ms']);
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')[1]).toMatch(/^verdict: stopped: the run's --deadline of 300ms passed during "same key, same body, sequential"; /);
    expect(run.stdout).toMatch(/^same key, same body, +.* stopped: the run's --deadline of 300ms +FAIL +1 /m);
    expect(run.stdout).toMatch(/^not run \(the run was stopped first\): concurrent, /m);
  }, 10_000);

  it('refuses a --deadline that is not a positive duration', async () => {
    const run = await runConform(['http://127.0.0.1:1/x', '--body', TEMPLATE, '--deadline', '0s']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--deadline must be more than 0/);
  });
});

describe('oncely conform: bodies over the 1 MiB cap', () => {
  it('holds 1 MiB of a 50 MB body and keeps the whole length and SHA-256', async () => {
    const url = await endpoint((res, { id }) => streamBig(res, id, BIG));
    const sender = createSender({ url: new URL(url), headersA: {}, headersB: undefined, timeoutMs: 20_000 });
    try {
      const answer = await sender.send({ key: 'k-1', body: '{}' });
      expect(answer.status).toBe(201);
      expect(answer).toMatchObject({ bytes: BIG, truncated: true, digest: bigDigest(BIG) });
      expect(Buffer.byteLength(answer.body)).toBe(CAP);
    } finally {
      sender.close();
    }
  }, 20_000);

  it('compares a 50 MB replay by length and SHA-256: the same bytes pass, a changed last byte fails', async () => {
    // Only the first key's answers are big, so the other checks stay quick.
    const big = (last: (replay: boolean) => string): Behaviour => {
      let bigId: string | undefined;
      return (res, { n, id, replay }) => {
        if (n === 1) bigId = id;
        return id === bigId ? streamBig(res, id, BIG, last(replay)) : created(res, id);
      };
    };
    const same = await conformReport([await endpoint(big(() => 'a')), '--body', TEMPLATE, '--concurrency', '2']);
    expect(same.report.checks[0]).toMatchObject({ id: 'replay', verdict: 'pass' });
    expect(same.report.checks[0]?.observed).toContain(`(${BIG} bytes, over the ${CAP}-byte cap: compared by length and SHA-256)`);
    const changed = await conformReport([await endpoint(big((replay) => (replay ? 'b' : 'a'))), '--body', TEMPLATE, '--concurrency', '2']);
    expect(changed.report.checks[0]).toMatchObject({ id: 'replay', verdict: 'fail' });
    expect(changed.report.checks[0]?.observed).toContain(`body not byte-identical (${BIG} then ${BIG} bytes)`);
  }, 30_000);
});

/**
 * `oncely conform`'s arguments and `--dry-run`: every bad input is a usage error (exit 2) that
 * says what is wrong before anything is sent, and the plan is printed without a request.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { PAYMENT_TEMPLATE, runConform } from './helpers/conform-run.js';

let received = 0;
const server = createServer((_req, res) => {
  received += 1;
  res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"x"}');
});
let url: string;
beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/payments`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('oncely conform: usage errors', () => {
  it.each([
    ['no URL', ['--body', PAYMENT_TEMPLATE], /give the endpoint to check/],
    ['a URL that is not http(s)', ['ftp://127.0.0.1/x', '--body', PAYMENT_TEMPLATE], /"ftp:\/\/127\.0\.0\.1\/x" is not an http:\/\/ or https:\/\/ URL/],
    ['no --body', ['URL'], /--body is required/],
    ['a body without {{unique}}', ['URL', '--body', '{"amount":1}'], /--body holds no \{\{unique\}\}/],
    [
      'a body that is not JSON once filled',
      ['URL', '--body', '{"amount":{{unique}}}'],
      /--body is not JSON once \{\{unique\}\} is filled in \(put it inside a string\)/,
    ],
    ['a slow body that is not JSON', ['URL', '--body', PAYMENT_TEMPLATE, '--slow-body', 'slow {{unique}}'], /--slow-body is not JSON/],
    ['a concurrency of 1', ['URL', '--body', PAYMENT_TEMPLATE, '--concurrency', '1'], /--concurrency must be an integer from 2 to 1000, got "1"/],
    ['a concurrency that is not a number', ['URL', '--body', PAYMENT_TEMPLATE, '--concurrency', 'many'], /--concurrency must be an integer/],
    ['a header without a colon', ['URL', '--body', PAYMENT_TEMPLATE, '--header', 'x-api-key abc'], /--header must be "NAME: VALUE", got "x-api-key abc"/],
    ['a header that sets the key', ['URL', '--body', PAYMENT_TEMPLATE, '--header', 'Idempotency-Key: k'], /--header cannot set idempotency-key/],
    ['a fault header without a value separator', ['URL', '--body', PAYMENT_TEMPLATE, '--fault-header', 'x-fault'], /--fault-header must be "NAME: VALUE"/],
    ['a token with a line break', ['URL', '--body', PAYMENT_TEMPLATE, '--token-b', 'a\nb'], /--token-b cannot be sent in an Authorization header/],
    ['the same caller twice', ['URL', '--body', PAYMENT_TEMPLATE, '--token', 't', '--token-b', 't'], /caller B has the same credentials as caller A/],
    ['a bad timeout', ['URL', '--body', PAYMENT_TEMPLATE, '--timeout', '10'], /--timeout must be a duration/],
    ['a mistyped option', ['URL', '--body', PAYMENT_TEMPLATE, '--dryrun'], /unknown option --dryrun; did you mean --dry-run\?/],
  ] as const)('refuses %s with exit 2 and sends nothing', async (_name, args, message) => {
    const before = received;
    const run = await runConform(args.map((arg) => (arg === 'URL' ? url : arg)));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^oncely conform: /);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('Run `oncely conform --help` for its options.');
    expect(received).toBe(before);
  });

  it('is listed by oncely --help', async () => {
    const lines: string[] = [];
    const original = console.log;
    console.log = (text: string) => void lines.push(text);
    try {
      expect(await main(['--help'])).toBe(0);
    } finally {
      console.log = original;
    }
    expect(lines.join('\n')).toMatch(/^ {2}conform +check an HTTP endpoint's Idempotency-Key behaviour from the outside$/m);
  });
});

describe('oncely conform --dry-run', () => {
  it('prints the plan, what each check sends and may create, and sends nothing', async () => {
    const before = received;
    const run = await runConform([url, '--body', PAYMENT_TEMPLATE, '--token', 'tok_secret_1', '--concurrency', '5', '--dry-run']);
    expect(run.code).toBe(0);
    expect(received).toBe(before);
    expect(run.stdout).toContain(`the plan for POST ${url} (nothing sent)`);
    expect(run.stdout).toMatch(/^N identical requests at once +6 +up to 1 /m);
    expect(run.stdout).toMatch(/two callers, same key +0 +0 +n\/a: needs a second caller: --token-b or --header-b/);
    expect(run.stdout).toContain('Point it at a sandbox');
    // The headers by name, never the token.
    expect(run.stdout).toContain("caller A's headers: authorization.");
    expect(run.stdout).not.toContain('tok_secret_1');
  });

  it('prints the plan as JSON with --json: the checks that apply and why the others do not', async () => {
    const run = await runConform([url, '--body', PAYMENT_TEMPLATE, '--token', 'a', '--token-b', 'b', '--fault-header', 'x-fault: 1', '--dry-run', '--json']);
    const plan = JSON.parse(run.stdout) as { dryRun: boolean; checks: Array<{ id: string; requests: number; mayCreate: number; notApplicable?: string }> };
    expect(plan.dryRun).toBe(true);
    expect(plan.checks.find((c) => c.id === 'concurrent')).toMatchObject({ requests: 21, mayCreate: 1 });
    expect(plan.checks.find((c) => c.id === 'two-callers')).toMatchObject({ requests: 3, mayCreate: 2 });
    expect(plan.checks.filter((c) => c.notApplicable !== undefined).map((c) => c.id)).toEqual(['in-flight']);
  });
});

/**
 * `oncely conform URL`: checks from the outside how an HTTP endpoint honours `Idempotency-Key`
 * (draft-ietf-httpapi-idempotency-key-header and the design article's response matrix), one
 * black-box check after another, each with keys and body values of its own.
 *
 * Every request is real: it is meant for a sandbox. `--dry-run` prints what would be sent.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { checkHeaders } from '../client/request.js';
import { parseCommandArgs, readDuration, readInteger, reportParseFailure, tokenProblem, usageError } from './args.js';
import { CHECKS } from './conform-checks.js';
import { createSender, templateProblem } from './conform-http.js';
import { BODY_CAP_BYTES } from './conform-body.js';
import type { CheckContext, CheckSetup } from './conform-judging.js';
import { renderPlan, renderReport, summarize, type PlannedCheck } from './conform-report.js';
import { runChecks, runDeadline, sleeper, type RunOutcome } from './conform-runner.js';
import { judgeRun } from './conform-verdict.js';

const spec = {
  name: 'conform',
  positionals: 'URL',
  description:
    'Check how the endpoint URL honours Idempotency-Key, from the outside: replays, a concurrent burst, a key reused ' +
    'with another body, reordered JSON, malformed keys, two callers, transient answers, a duplicate in flight. ' +
    'Every request is real and may create resources: point it at a sandbox, and see the plan first with --dry-run. ' +
    `Bodies are read to ${BODY_CAP_BYTES / 1024 / 1024} MiB each; larger ones are compared by length and SHA-256. ` +
    'The report starts with a one-line verdict. Exit code 0 when every check that applies passes, 1 when one fails or the run is stopped.',
  options: {
    body: { type: 'string', value: 'JSON', help: 'request body template; {{unique}} (inside a string) gets a fresh value in every request' },
    token: { type: 'string', value: 'TOKEN', help: 'bearer token of caller A (default: $ONCELY_TOKEN)' },
    'token-b': { type: 'string', value: 'TOKEN', help: 'bearer token of a second caller, for the two-callers check' },
    header: { type: 'string', value: '"NAME: VALUE"', multiple: true, help: 'a header of caller A (repeatable), e.g. an API key' },
    'header-b': {
      type: 'string',
      value: '"NAME: VALUE"',
      multiple: true,
      help: "a header of caller B (repeatable); B sends its own headers only, none of A's",
    },
    concurrency: { type: 'string', value: 'N', help: 'identical requests sent at once by the concurrency check (default 20)' },
    'fault-header': { type: 'string', value: '"NAME: VALUE"', help: 'a header that makes the endpoint answer 5xx or 429, for the transient check' },
    'slow-body': { type: 'string', value: 'JSON', help: 'a body template the endpoint takes well over 100 ms to answer, for the in-flight check' },
    timeout: {
      type: 'string',
      value: 'DURATION',
      help: 'the whole time one request may take, from sending it to the last byte of its answer; past it the request fails (default 30s)',
    },
    deadline: {
      type: 'string',
      value: 'DURATION',
      help: 'the whole time the run may take; past it the run stops, reports the checks done and fails the one it was in (default 5m)',
    },
    json: { type: 'boolean', help: 'print the results (or the plan) as JSON' },
    'dry-run': { type: 'boolean', help: 'print the plan (checks, requests, what they may create) and send nothing' },
  },
} as const;

/** A run's settings, resolved once from the arguments. */
interface ConformSettings extends CheckSetup {
  readonly url: URL;
  readonly template: string;
  readonly headersA: Readonly<Record<string, string>>;
  readonly headersB: Readonly<Record<string, string>> | undefined;
  readonly timeoutMs: number;
  readonly deadlineMs: number;
  /** `--deadline` as given, for the message of a stopped run. */
  readonly deadlineText: string;
  readonly json: boolean;
  readonly dryRun: boolean;
}

type Resolved = { readonly ok: true; readonly settings: ConformSettings } | { readonly ok: false; readonly exitCode: 0 | 2; readonly message: string };

/** The run's default bound: a healthy run takes seconds; every request timing out at 30 s would take 20 minutes. */
const DEFAULT_DEADLINE = '5m';
/** The longest timer Node keeps (about 24.8 days): a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A positive duration option in milliseconds, or what is wrong with it. */
function readBound(name: 'timeout' | 'deadline', raw: string | undefined, fallback: string): number | string {
  const read = readDuration(name, raw, { fallback });
  if (!read.ok) return read.problem;
  if (read.value <= 0) return `--${name} must be more than 0`;
  return read.value > MAX_TIMER_MS ? `--${name} must be at most 24d` : read.value;
}

const TOKEN_CHARS = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `"Name: value"` as a lower-case name and its value, or what is wrong with it. */
function parseHeader(option: string, text: string): { name: string; value: string } | string {
  const colon = text.indexOf(':');
  const name = text.slice(0, colon).trim().toLowerCase();
  const value = text.slice(colon + 1).trim();
  if (colon <= 0 || !TOKEN_CHARS.test(name)) return `--${option} must be "NAME: VALUE", got ${JSON.stringify(text)}`;
  if (checkHeaders({ [name]: value }) !== undefined)
    return `--${option} ${JSON.stringify(name)} holds a line break, a control character or a character outside Latin-1`;
  if (name === 'idempotency-key' || name === 'content-length') return `--${option} cannot set ${name}: conform sets it on every request itself`;
  return { name, value };
}

/** Caller headers from a token and `--header` values, or what is wrong with one of them. */
function callerHeaders(token: string | undefined, headers: readonly string[], suffix: string): Record<string, string> | string {
  const result: Record<string, string> = {};
  if (token !== undefined) {
    const problem = tokenProblem(token);
    if (problem !== undefined) return problem.replace('--token (or $ONCELY_TOKEN)', `--token${suffix}`);
    result['authorization'] = `Bearer ${token}`;
  }
  for (const text of headers) {
    const parsed = parseHeader(`header${suffix}`, text);
    if (typeof parsed === 'string') return parsed;
    result[parsed.name] = parsed.value;
  }
  return result;
}

function resolveSettings(argv: readonly string[]): Resolved {
  const parsed = parseCommandArgs(argv, spec);
  if (!parsed.ok) return parsed;
  const { values } = parsed;
  const raw = parsed.positionals[0];
  if (raw === undefined) return usageError(spec, 'give the endpoint to check, e.g. oncely conform http://127.0.0.1:8787/v1/payments --body ...');
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    return usageError(spec, `${JSON.stringify(raw)} is not an http:// or https:// URL`);
  if (values.body === undefined)
    return usageError(
      spec,
      '--body is required: the JSON of one request, with {{unique}} where a fresh value goes, e.g. \'{"amount":100,"reference":"{{unique}}"}\'',
    );
  const bodyProblem = templateProblem(values.body);
  if (bodyProblem !== undefined) return usageError(spec, `--body ${bodyProblem}`);
  const slowProblem = values['slow-body'] === undefined ? undefined : templateProblem(values['slow-body']);
  if (slowProblem !== undefined) return usageError(spec, `--slow-body ${slowProblem}`);
  const concurrency = readInteger('concurrency', values.concurrency, 20, 2, 1000);
  if (!concurrency.ok) return usageError(spec, concurrency.problem);
  const timeoutMs = readBound('timeout', values.timeout, '30s');
  if (typeof timeoutMs === 'string') return usageError(spec, timeoutMs);
  const deadlineMs = readBound('deadline', values.deadline, DEFAULT_DEADLINE);
  if (typeof deadlineMs === 'string') return usageError(spec, deadlineMs);
  const headersA = callerHeaders(values.token ?? process.env['ONCELY_TOKEN'], values.header ?? [], '');
  if (typeof headersA === 'string') return usageError(spec, headersA);
  const hasB = values['token-b'] !== undefined || (values['header-b'] ?? []).length > 0;
  const headersB = hasB ? callerHeaders(values['token-b'], values['header-b'] ?? [], '-b') : undefined;
  if (typeof headersB === 'string') return usageError(spec, headersB);
  if (headersB !== undefined && JSON.stringify(headersB) === JSON.stringify(headersA))
    return usageError(spec, 'caller B has the same credentials as caller A: the two-callers check needs two callers');
  const fault = values['fault-header'] === undefined ? undefined : parseHeader('fault-header', values['fault-header']);
  if (typeof fault === 'string') return usageError(spec, fault);
  return {
    ok: true,
    settings: {
      url,
      template: values.body,
      headersA,
      headersB,
      concurrency: concurrency.value,
      hasCallerB: headersB !== undefined,
      faultHeader: fault,
      slowTemplate: values['slow-body'],
      timeoutMs,
      deadlineMs,
      deadlineText: values.deadline ?? DEFAULT_DEADLINE,
      json: values.json === true,
      dryRun: values['dry-run'] === true,
    },
  };
}

/** Prints what a run would send and may create (`--dry-run`), and sends nothing. */
function printPlan(settings: ConformSettings): number {
  const plan: PlannedCheck[] = CHECKS.map((check) => {
    const planned = check.plan(settings);
    const base = { id: check.id, title: check.title, expected: check.expected };
    return 'notApplicable' in planned ? { ...base, requests: 0, mayCreate: 0, notApplicable: planned.notApplicable } : { ...base, ...planned };
  });
  // Header names only: a dry run's output may be pasted into a ticket, a token must not.
  const names = (headers: Readonly<Record<string, string>> | undefined): string => (headers === undefined ? '' : Object.keys(headers).join(', ') || '(none)');
  const sends = [
    `Every request: POST with content-type: application/json and idempotency-key: conform-<run>-k<n> (malformed ones in the key checks); caller A's headers: ${names(settings.headersA)}` +
      (settings.headersB === undefined ? '.' : `; caller B's: ${names(settings.headersB)}.`),
    `Each request is given up on after ${settings.timeoutMs} ms in all (--timeout), the run after ${settings.deadlineText} (--deadline).`,
  ];
  const target = settings.url.href;
  console.log(settings.json ? JSON.stringify({ url: target, dryRun: true, checks: plan }, null, 2) : renderPlan(target, plan, sends));
  return 0;
}

/** Runs every check inside the run's deadline, prints the report, and returns the exit code. */
async function runAndReport(settings: ConformSettings): Promise<number> {
  const deadline = runDeadline(settings.deadlineMs, settings.deadlineText);
  const { signal } = deadline;
  const sender = createSender({ url: settings.url, headersA: settings.headersA, headersB: settings.headersB, timeoutMs: settings.timeoutMs, signal });
  // Keys and values carry a random run id: an endpoint keeps keys for a day or more, and a second
  // run must not meet the first one's.
  const run = randomBytes(4).toString('hex');
  let sequence = 0;
  const context: CheckContext = {
    ...settings,
    sender,
    unique: () => `conform-${run}-v${(sequence += 1)}`,
    key: () => `conform-${run}-k${(sequence += 1)}`,
    sleep: sleeper(signal),
  };
  let outcome: RunOutcome;
  try {
    outcome = await runChecks(CHECKS, context, signal);
  } finally {
    deadline.clear();
    sender.close();
  }
  const { checks, verdict } = judgeRun(outcome);
  const report = summarize(settings.url.href, settings.concurrency, checks, { verdict, notRun: outcome.notRun, stoppedIn: outcome.stopped?.id });
  console.log(settings.json ? JSON.stringify(report, null, 2) : renderReport(report));
  return report.failed > 0 || outcome.stopped !== undefined ? 1 : 0;
}

/**
 * `oncely conform URL --body JSON [...]`. Exit codes: 0 every check that applies passed; 1 a
 * check failed, or the run was stopped by its `--deadline`; 2 usage error.
 *
 * @example
 * ```ts
 * process.exitCode = await conform(['http://127.0.0.1:8787/v1/payments', '--token', 'test_acme', '--token-b', 'test_globex',
 *   '--body', '{"amount":100,"currency":"EUR","reference":"{{unique}}"}']);
 * ```
 */
export async function conform(argv: readonly string[]): Promise<number> {
  const resolved = resolveSettings(argv);
  if (!resolved.ok) return reportParseFailure(resolved);
  return resolved.settings.dryRun ? printPlan(resolved.settings) : runAndReport(resolved.settings);
}

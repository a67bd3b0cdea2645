/**
 * What `oncely conform` prints: the plan (`--dry-run`), and the results as a table whose long
 * cells wrap inside their column, or as JSON (`--json`) for CI.
 *
 * @module
 */
import type { Verdict } from './conform-judging.js';

/** One check's outcome. */
export interface CheckResult {
  readonly id: string;
  readonly title: string;
  /** What the IETF draft or the design article says. */
  readonly expected: string;
  /** What the endpoint did. */
  readonly observed: string;
  readonly verdict: Verdict;
  /** Requests this check sent. */
  readonly requests: number;
  /** Resources its successful answers named (distinct `Location`s or ids): what it may have created. */
  readonly created: number;
}

/** How a run ended, besides its checks' results. */
export interface RunSummary {
  /** The run in one line: conforms, how many checks failed, keys ignored, or where it was stopped. */
  readonly verdict: string;
  /** Ids of the checks never started: the run's `--deadline` passed before them. */
  readonly notRun: readonly string[];
  /** The id of the check the deadline stopped. */
  readonly stoppedIn?: string | undefined;
}

/** A whole run, as `--json` prints it. */
export interface ConformReport extends RunSummary {
  readonly url: string;
  readonly concurrency: number;
  readonly checks: readonly CheckResult[];
  readonly passed: number;
  readonly failed: number;
  readonly notApplicable: number;
  readonly requests: number;
  readonly created: number;
}

/** One check's line of the `--dry-run` plan. */
export interface PlannedCheck {
  readonly id: string;
  readonly title: string;
  readonly expected: string;
  /** At most this many requests and created resources; absent when the check does not apply. */
  readonly requests: number;
  readonly mayCreate: number;
  readonly notApplicable?: string;
}

/**
 * The report of a run from its checks' results.
 *
 * @example
 * ```ts
 * const report = summarize('http://127.0.0.1:8787/v1/payments', 20, results, { verdict: '1 check failed', notRun: [] });
 * process.exitCode = report.failed > 0 ? 1 : 0;
 * ```
 */
export function summarize(url: string, concurrency: number, checks: readonly CheckResult[], run: RunSummary): ConformReport {
  const count = (verdict: Verdict): number => checks.filter((check) => check.verdict === verdict).length;
  return {
    url,
    verdict: run.verdict,
    ...(run.stoppedIn === undefined ? {} : { stoppedIn: run.stoppedIn }),
    notRun: run.notRun,
    concurrency,
    checks,
    passed: count('pass'),
    failed: count('fail'),
    notApplicable: count('n/a'),
    requests: checks.reduce((sum, check) => sum + check.requests, 0),
    created: checks.reduce((sum, check) => sum + check.created, 0),
  };
}

/** `text` cut into lines of at most `width` characters, at spaces where it can. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((part) => part !== '')) {
    for (let rest = word; rest.length > 0;) {
      const room = line === '' ? width : width - line.length - 1;
      if (rest.length <= room) {
        line = line === '' ? rest : `${line} ${rest}`;
        rest = '';
      } else if (line !== '') {
        lines.push(line);
        line = '';
      } else {
        lines.push(rest.slice(0, width));
        rest = rest.slice(width);
      }
    }
  }
  if (line !== '') lines.push(line);
  return lines.length === 0 ? [''] : lines;
}

/** Rows of cells as a plain-text table: a header, a rule, and each row's cells wrapped to `widths`. */
function table(headings: readonly string[], widths: readonly number[], rows: ReadonlyArray<readonly string[]>): string {
  const render = (cells: readonly string[]): string[] => {
    const wrapped = cells.map((cell, i) => wrap(cell, widths[i] ?? 20));
    const height = Math.max(...wrapped.map((lines) => lines.length));
    return Array.from({ length: height }, (_, line) =>
      wrapped
        .map((lines, i) => (lines[line] ?? '').padEnd(widths[i] ?? 20))
        .join('  ')
        .trimEnd(),
    );
  };
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [...render(headings), rule, ...rows.flatMap((row) => [...render(row), ''])].join('\n').trimEnd();
}

/**
 * The results as a table: check, what the draft or article says, what the endpoint did, the
 * verdict, requests sent and resources created; then the totals.
 *
 * @example
 * ```ts
 * console.log(renderReport(report));
 * ```
 */
export function renderReport(report: ConformReport): string {
  const rows = report.checks.map((check) => [
    check.title,
    check.expected,
    check.observed,
    check.verdict.toUpperCase(),
    String(check.requests),
    String(check.created),
  ]);
  const verdict = report.failed > 0 ? `${report.failed} check${report.failed === 1 ? '' : 's'} FAILED` : 'every check that applies passed';
  const notRun = report.notRun.length === 0 ? [] : [`not run (the run was stopped first): ${report.notRun.join(', ')}`];
  return [
    `oncely conform POST ${report.url}`,
    `verdict: ${report.verdict}`,
    '',
    table(['check', 'the draft / article says', 'the endpoint did', 'result', 'sent', 'made'], [22, 36, 40, 6, 4, 4], rows),
    '',
    `${verdict}: ${report.passed} pass, ${report.failed} fail, ${report.notApplicable} n/a; ${report.requests} requests sent, ` +
      `up to ${report.created} resources created ("made": distinct Locations or ids among the successes).`,
    ...notRun,
  ].join('\n');
}

/**
 * The `--dry-run` plan: what each check would send and could create, which do not apply, and
 * `sends`: lines on the headers every request carries.
 *
 * @example
 * ```ts
 * console.log(renderPlan(url, plan, ['caller A: authorization']));
 * ```
 */
export function renderPlan(url: string, plan: readonly PlannedCheck[], sends: readonly string[] = []): string {
  const rows = plan.map((check) => [
    check.title,
    check.notApplicable === undefined ? String(check.requests) : '0',
    check.notApplicable === undefined ? `up to ${check.mayCreate}` : '0',
    check.notApplicable === undefined ? check.expected : `n/a: ${check.notApplicable}`,
  ]);
  const live = plan.filter((check) => check.notApplicable === undefined);
  const requests = live.reduce((sum, check) => sum + check.requests, 0);
  const created = live.reduce((sum, check) => sum + check.mayCreate, 0);
  return [
    `oncely conform --dry-run: the plan for POST ${url} (nothing sent)`,
    '',
    table(['check', 'requests', 'may create', 'expects'], [32, 8, 10, 60], rows),
    '',
    `${requests} requests in all, each with a fresh key and a fresh {{unique}} value; up to ${created} resources may be created.`,
    ...sends,
    'Point it at a sandbox: every request is real.',
  ].join('\n');
}

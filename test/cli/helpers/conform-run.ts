/**
 * Runs `oncely conform` in this process and reads its `--json` report, so a test can say which
 * checks passed, failed or did not apply.
 */
import { vi } from 'vitest';
import { conform } from '../../../src/cli/conform.js';
import type { ConformReport } from '../../../src/cli/conform-report.js';

/** A payment-shaped body template, as `oncely serve` takes it. */
export const PAYMENT_TEMPLATE = '{"amount":100,"currency":"EUR","reference":"{{unique}}"}';

export interface ConformRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `oncely conform ...args`, its console output captured. */
export async function runConform(args: readonly string[]): Promise<ConformRun> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => void out.push(parts.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => void err.push(parts.join(' ')));
  try {
    const code = await conform(args);
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** `runConform(args + --json)`: the exit code and the report. */
export async function conformReport(args: readonly string[]): Promise<{ code: number; report: ConformReport }> {
  const run = await runConform([...args, '--json']);
  return { code: run.code, report: JSON.parse(run.stdout) as ConformReport };
}

/** The ids of the checks with `verdict`, in report order. */
export function idsWith(report: ConformReport, verdict: 'pass' | 'fail' | 'n/a'): string[] {
  return report.checks.filter((check) => check.verdict === verdict).map((check) => check.id);
}

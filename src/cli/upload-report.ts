/**
 * The uploader's tally and final report: every valid row ends as executed, replayed, declined
 * or pending (outcome unknown), every other row as invalid with its line and why.
 *
 * Counts are exact; the per-row lists are capped so a million bad rows cannot exhaust memory.
 *
 * @module
 */

/**
 * Outcomes of a row.
 *
 * @example
 * ```ts
 * tally.record(RowOutcome.Executed);
 * ```
 */
export const RowOutcome = {
  /** Sent and executed now (2xx, not a replay). */
  Executed: 'executed',
  /** Already settled: the journal or the server answered with the stored result. */
  Replayed: 'replayed',
  /** A final refusal (402 declined, 422 key reused with another body, 400…). */
  Declined: 'declined',
  /** No final outcome yet (retries exhausted on an unknown outcome, or stopped): resumable. */
  Pending: 'pending',
  /** Cannot be sent: the row is malformed. */
  Invalid: 'invalid',
} as const;

/** One of {@link RowOutcome}'s values. */
export type RowOutcome = (typeof RowOutcome)[keyof typeof RowOutcome];

/** A row that did not simply succeed, as listed in the report. */
export interface RowProblem {
  readonly line: number;
  readonly key?: string;
  readonly status?: number;
  readonly reason: string;
}

/** The report of one upload run (also written by `--report FILE`). */
export interface UploadReport {
  readonly file: string;
  readonly url: string | null;
  readonly dryRun: boolean;
  /** `--strict`: any invalid row fails the run (exit 1); without it, only a file with no valid row does. */
  readonly strict: boolean;
  /** Whether the run stopped before every row was sent (see `stopReason`). */
  readonly interrupted: boolean;
  /**
   * `interrupted` (Ctrl-C), `unreachable` (the server settled nothing for many rows in a row),
   * `journal` (it failed), `unauthorized` (a `401`/`403`: the token was refused); `null` when
   * not stopped.
   */
  readonly stopReason: string | null;
  readonly rows: number;
  readonly valid: number;
  readonly executed: number;
  readonly replayed: number;
  readonly declined: number;
  /** Valid rows journaled without a final outcome: what `oncely pending` lists for them. */
  readonly pending: number;
  /** Of `pending`, the rows never sent: the run stopped before their turn. */
  readonly unsent: number;
  /** Rows the run stopped before reading: neither journaled nor checked. */
  readonly unread: number;
  readonly invalid: number;
  /** Rows this run sent and saw to an answer or to the end of their retries: what the rate counts. */
  readonly sent: number;
  readonly elapsedMs: number;
  /** `sent` per second: rows settled by an earlier run, or never sent, take no time. */
  readonly rowsPerSecond: number;
  /** Up to {@link MAX_LISTED} rows per list; the counts above are always exact. */
  readonly invalidRows: readonly RowProblem[];
  readonly declinedRows: readonly RowProblem[];
  readonly pendingRows: readonly RowProblem[];
  /** Every valid row has a final server answer (executed, replayed or declined), and the run was not stopped. */
  readonly complete: boolean;
}

/** How many rows each list of the report keeps. */
export const MAX_LISTED = 1000;

/** How many rows of each list the text report prints: a screenful; `--report FILE` has the rest. */
export const MAX_PRINTED = 20;

/**
 * Whether the run did what it was asked, its exit code 0: every valid row has a final outcome
 * (a dry run: would be sent), and the invalid rows are tolerated: with `strict`, none; without,
 * as long as some row is valid. A file whose every row is invalid sends nothing, which no caller
 * asks for; a strict caller (a CI check of the file, a cron job) wants every row to go through.
 *
 * @example
 * ```ts
 * process.exitCode = succeeded(report) ? 0 : 1;
 * ```
 */
export function succeeded(report: UploadReport): boolean {
  const tolerated = report.invalid === 0 || (!report.strict && report.valid > 0);
  return tolerated && (report.dryRun || report.complete);
}

/** Accumulates outcomes as rows finish; see {@link createTally}. */
export interface Tally {
  readonly counts: Record<Exclude<RowOutcome, 'invalid'> | 'invalid', number>;
  record(outcome: RowOutcome, problem?: RowProblem): void;
  report(base: {
    file: string;
    url: string | null;
    dryRun: boolean;
    strict: boolean;
    interrupted: boolean;
    stopReason: string | null;
    rows: number;
    sent: number;
    unsent: number;
    elapsedMs: number;
  }): UploadReport;
}

/**
 * Creates an empty tally.
 *
 * @example
 * ```ts
 * const tally = createTally();
 * tally.record('invalid', { line: 7, reason: 'amount "x" is not an integer' });
 * ```
 */
export function createTally(): Tally {
  const counts = { executed: 0, replayed: 0, declined: 0, pending: 0, invalid: 0 };
  const lists: Record<'invalid' | 'declined' | 'pending', RowProblem[]> = { invalid: [], declined: [], pending: [] };
  return {
    counts,
    record(outcome, problem) {
      counts[outcome] += 1;
      if (problem !== undefined && (outcome === 'invalid' || outcome === 'declined' || outcome === 'pending')) {
        if (lists[outcome].length < MAX_LISTED) lists[outcome].push(problem);
      }
    },
    report(base) {
      // Rows not reached (an interrupted run) count as valid until read: they are unsent, not bad.
      const valid = base.rows - counts.invalid;
      // Every row is in exactly one figure: rows = executed + replayed + declined + pending + unread + invalid.
      const unread = base.dryRun ? 0 : valid - counts.executed - counts.replayed - counts.declined - counts.pending;
      const byLine = (a: RowProblem, b: RowProblem): number => a.line - b.line;
      return {
        ...base,
        valid,
        ...counts,
        unread,
        rowsPerSecond: base.elapsedMs > 0 ? Math.round((base.sent * 1000) / base.elapsedMs) : 0,
        invalidRows: [...lists.invalid].sort(byLine),
        declinedRows: [...lists.declined].sort(byLine),
        pendingRows: [...lists.pending].sort(byLine),
        complete: counts.executed + counts.replayed + counts.declined === valid && !base.interrupted,
      };
    },
  };
}

function listing(title: string, rows: readonly RowProblem[], total: number): string[] {
  if (total === 0) return [];
  const printed = rows.slice(0, MAX_PRINTED);
  const lines = printed.map((row) => `  line ${row.line}: ${row.status === undefined ? '' : `${row.status} `}${row.reason}`);
  if (total > printed.length) lines.push(`  … and ${total - printed.length} more (--report FILE lists the first ${MAX_LISTED})`);
  return ['', `${title}:`, ...lines];
}

/** The last lines: whether the run did what it was asked, and if not what to do. */
function verdict(report: UploadReport): string[] {
  const noneValid = report.invalid > 0 && report.valid === 0;
  const refused = noneValid || (report.strict && report.invalid > 0);
  const fix = refused
    ? [
        noneValid
          ? `no row of the file is valid: ${report.dryRun ? 'none would be sent' : 'nothing was sent'}; fix the file`
          : `${report.invalid} invalid rows (--strict): fix them in the file and run it again; rows already settled are not sent twice`,
      ]
    : [];
  if (report.dryRun) return fix.length === 0 ? [] : ['', ...fix];
  if (report.complete) return ['', ...fix, ...(refused ? [] : ['every valid row has a final outcome'])];
  return [
    '',
    ...fix,
    ...(report.stopReason === 'unauthorized' ? ['unauthorized: check --token (the server refused it; nothing was executed)'] : []),
    `${report.valid - report.executed - report.replayed - report.declined} valid rows have no final outcome yet: run the same command again to resume`,
  ];
}

/**
 * Renders the report for a person.
 *
 * @example
 * ```ts
 * console.log(renderReport(tally.report({ file, url, dryRun: false, strict: false, interrupted: false, stopReason: null, rows, sent, unsent, elapsedMs })));
 * ```
 */
export function renderReport(report: UploadReport): string {
  const head = report.dryRun
    ? `dry run of ${report.file}: nothing was sent`
    : `${report.interrupted ? `stopped (${report.stopReason ?? 'interrupted'})` : 'uploaded'} ${report.file} → ${report.url ?? ''} in ${(report.elapsedMs / 1000).toFixed(1)}s (${report.rowsPerSecond} rows/s)`;
  const figures: Array<[string, number]> = report.dryRun
    ? [
        ['rows', report.rows],
        ['valid', report.valid],
        ['invalid', report.invalid],
      ]
    : [
        ['rows', report.rows],
        ['executed', report.executed],
        ['replayed', report.replayed],
        ['declined', report.declined],
        ['pending', report.pending],
        ...(report.unread > 0 ? [['not read', report.unread] as [string, number]] : []),
        ['invalid', report.invalid],
      ];
  const notes: Record<string, string> = {
    pending: report.unsent > 0 ? `  (${report.unsent} not sent yet)` : '',
  };
  return [
    head,
    ...figures.map(([name, value]) => `  ${name.padEnd(9)} ${String(value).padStart(9)}${notes[name] ?? ''}`),
    ...listing('invalid rows', report.invalidRows, report.invalid),
    ...listing('declined rows', report.declinedRows, report.declined),
    ...listing('pending rows (outcome unknown)', report.pendingRows, report.pending - report.unsent),
    ...verdict(report),
  ].join('\n');
}

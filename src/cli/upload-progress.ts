/**
 * Progress output for long-running commands: a bar redrawn in place, with rate and ETA, on a
 * terminal; plain timestamped lines otherwise (CI logs, `| tee`), so a log never fills with
 * carriage returns.
 *
 * @module
 */

/** Counters shown on the progress line, by outcome. */
export type ProgressCounts = Readonly<Record<string, number>>;

/** Where progress goes and how it looks. */
export interface ProgressOptions {
  /** Rows (or operations) expected in all; `undefined` hides the bar and the ETA. */
  readonly total: number | undefined;
  /** The stream written to: `process.stderr`, so stdout stays clean for `--json` output. */
  readonly stream: { write(text: string): unknown; readonly isTTY?: boolean; readonly columns?: number };
  /** What is being counted, e.g. `rows`. */
  readonly unit: string;
  /** Minimum time between two redraws (TTY) or two lines (plain). */
  readonly intervalMs?: number;
  /** Clock, injectable for tests. */
  readonly now?: () => number;
}

/** A progress display; see {@link createProgress}. */
export interface Progress {
  /**
   * Reports `done` units finished so far, `worked` of them by this run (default: all): a row
   * settled by an earlier run, or stopped before it was sent, takes no time, so the rate and the
   * ETA count only the worked ones. Redraws when the interval has passed.
   */
  update(done: number, counts: ProgressCounts, worked?: number): void;
  /** Draws the final state and ends the line. */
  finish(done: number, counts: ProgressCounts, worked?: number): void;
}

/**
 * An ETA is shown once the rate rests on this many worked units (or 5 % of the total, if fewer)
 * and this much time: the first
 * units finish after a start-up (a server warming up, or crashing on purpose), and a rate taken
 * from them alone promised half an hour for a 20-second run.
 */
const ETA_MIN_UNITS = 20;
const ETA_MIN_MS = 2_000;

/**
 * Formats seconds as `m:ss` or `h:mm:ss`.
 *
 * @example
 * ```ts
 * formatDuration(75); // '1:15'
 * ```
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

function formatCounts(counts: ProgressCounts): string {
  return Object.entries(counts)
    .filter(([, value]) => value > 0)
    .map(([name, value]) => `${name} ${value}`)
    .join(' · ');
}

/**
 * Creates a progress display on `options.stream`: a redrawn bar on a TTY, plain lines
 * otherwise.
 *
 * @example
 * ```ts
 * const progress = createProgress({ total: 10_000, stream: process.stderr, unit: 'rows' });
 * progress.update(2_500, { executed: 2_400, replayed: 100 });
 * progress.finish(10_000, { executed: 9_900, replayed: 100 });
 * ```
 */
export function createProgress(options: ProgressOptions): Progress {
  const tty = options.stream.isTTY === true;
  const now = options.now ?? Date.now;
  const intervalMs = options.intervalMs ?? (tty ? 100 : 5_000);
  const started = now();
  let lastDraw = Number.NEGATIVE_INFINITY;

  const line = (done: number, counts: ProgressCounts, worked: number, final: boolean): string => {
    const elapsedMs = Math.max(now() - started, 1);
    const rate = worked / (elapsedMs / 1000);
    const enough = Math.min(ETA_MIN_UNITS, Math.ceil((options.total ?? 0) * 0.05));
    const settledRate = final || (worked >= enough && elapsedMs >= ETA_MIN_MS);
    const parts: string[] = [];
    if (options.total !== undefined && options.total > 0) {
      const ratio = Math.min(done / options.total, 1);
      if (tty) {
        const width = 24;
        const filled = Math.round(ratio * width);
        parts.push(`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`);
      }
      parts.push(`${(ratio * 100).toFixed(0).padStart(3)}%`, `${done}/${options.total} ${options.unit}`);
      const remaining = Math.max(options.total - done, 0);
      const eta = remaining === 0 ? 0 : settledRate && rate > 0 ? remaining / rate : Number.POSITIVE_INFINITY;
      parts.push(`${rate.toFixed(0)} ${options.unit}/s`, `ETA ${formatDuration(eta)}`);
    } else {
      parts.push(`${done} ${options.unit}`, `${rate.toFixed(0)} ${options.unit}/s`);
    }
    const tail = formatCounts(counts);
    return tail === '' ? parts.join(' ') : `${parts.join(' ')} · ${tail}`;
  };

  const draw = (text: string, final: boolean): void => {
    if (tty) {
      const columns = options.stream.columns ?? 120;
      // \r + clear-to-end-of-line redraws in place; cut to the width so the line never wraps.
      options.stream.write(`\r\x1b[K${text.slice(0, Math.max(columns - 1, 20))}${final ? '\n' : ''}`);
    } else {
      options.stream.write(`progress: ${text}\n`);
    }
  };

  return {
    update(done, counts, worked = done) {
      const at = now();
      if (at - lastDraw < intervalMs) return;
      lastDraw = at;
      draw(line(done, counts, worked, false), false);
    },
    finish(done, counts, worked = done) {
      draw(line(done, counts, worked, true), true);
    },
  };
}

/**
 * Renders `latest.json` as the Markdown the README embeds (`bench/results/latest.md`).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { KEYS_COLUMN, keysOf } from '../peers/labels.js';
import type { Figure, ResultTable, SuiteResult } from './figures.js';
import { verdict } from './verdict.js';

/** The whole run, as written to `bench/results/latest.json`. */
export interface BenchReport {
  readonly generatedAt: string;
  readonly command: string;
  readonly quick: boolean;
  readonly durationSec: number;
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly memoryGb: number;
    readonly os: string;
    readonly loadAverageAtStart: readonly number[];
  };
  readonly node: string;
  readonly commit: string;
  readonly suites: Readonly<Record<string, SuiteResult | { readonly error: string }>>;
  /** Other engineers' benchmarks (bench/journal.ts, upload.ts, postgres.ts), as they report. */
  readonly external: Readonly<Record<string, unknown>>;
}

const fmt = (value: number, unit: string): string => {
  if (!Number.isFinite(value)) return '—';
  if (unit === 'req/s' || unit === 'per 1 000') return Math.round(value).toLocaleString('en');
  return String(value);
};

const cell = (v: string | number | boolean | null): string => (v === null ? '—' : String(v).replace(/\|/g, '\\|'));

function table(columns: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>): string {
  return [`| ${columns.map(cell).join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

function figuresOf(report: BenchReport): Figure[] {
  return Object.values(report.suites).flatMap((s) => ('figures' in s ? [...s.figures] : []));
}

/**
 * A peer table (`peers.*`, rows labelled by layer) with the column saying where each layer keeps
 * its keys, taken from `bench/peers/labels.ts` by label, right after the layer: a row of an
 * in-memory layer is not read as a durable one. Results written before the column existed get it
 * too; a label no peer has any more shows `—`.
 */
function withKeys(t: ResultTable): ResultTable {
  if (!t.id.startsWith('peers.') || t.columns[0] !== 'layer' || t.columns.includes(KEYS_COLUMN)) return t;
  return {
    ...t,
    columns: [t.columns[0], KEYS_COLUMN, ...t.columns.slice(1)],
    rows: t.rows.map(([layer, ...rest]) => [layer ?? null, typeof layer === 'string' ? keysOf(layer) : null, ...rest]),
  };
}

function tablesOf(report: BenchReport): ResultTable[] {
  return Object.values(report.suites).flatMap((s) => ('tables' in s ? s.tables.map(withKeys) : []));
}

/**
 * The Goals table: each goal's median, the spread of its per-round values, and the verdict in
 * words — met or missed by the median, and whether that would still hold at the worst end of the
 * spread (`verdict.ts`).
 */
function goals(figures: readonly Figure[]): string {
  const rows = figures
    .filter((f) => f.goal)
    .map((f) => [
      f.label,
      `${fmt(f.median, f.unit)} ${f.unit}`,
      `${fmt(f.min, f.unit)} – ${fmt(f.max, f.unit)} (${f.n} rounds)`,
      `${f.goal!.op} ${f.goal!.value}`,
      verdict(f) ?? '',
    ]);
  return table(['figure', 'median', 'rounds’ spread (min – max)', 'goal', 'verdict'], rows);
}

/**
 * The repository's web address (package.json's `repository`): the page ships in the package,
 * which holds no bench/ sources, so it links each one there.
 */
const REPOSITORY = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { repository: { url: string } }).repository.url
  .replace(/^git\+/, '')
  .replace(/\.git$/, '');

function external(report: BenchReport): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(report.external)) {
    // A benchmark that printed a table instead of JSON is shown as the text it printed.
    const output = typeof value === 'object' && value !== null && 'output' in value ? (value as { output: unknown }).output : undefined;
    const [lang, text] = typeof output === 'string' ? ['text', output] : ['json', JSON.stringify(value, null, 1) ?? 'null'];
    parts.push(
      `<details><summary><code>bench/${name}.ts</code></summary>\n\n[\`bench/${name}.ts\`](${REPOSITORY}/blob/main/bench/${name}.ts)\n\n\`\`\`${lang}\n${text.length > 4000 ? `${text.slice(0, 4000)}\n…` : text}\n\`\`\`\n</details>`,
    );
  }
  return parts.join('\n\n');
}

/**
 * The Markdown page: run facts, goals, every result table, every figure. With `summary`, the
 * part the README embeds: no per-figure list, headings one level down.
 *
 * @example
 * ```ts
 * writeFileSync('bench/results/latest.md', renderMarkdown(report));
 * ```
 */
export function renderMarkdown(report: BenchReport, options: { readonly summary?: boolean } = {}): string {
  const figures = figuresOf(report);
  const failed = Object.entries(report.suites).filter(([, s]) => 'error' in s);
  const lines = [
    `Measured ${report.generatedAt.slice(0, 16).replace('T', ' ')} UTC on ${report.machine.cpu} (${report.machine.cores} cores, ${report.machine.memoryGb} GB, ${report.machine.os}; load average ${report.machine.loadAverageAtStart.map((l) => l.toFixed(1)).join(' / ')} at start), Node ${report.node}, commit \`${report.commit}\`${report.quick ? ', **--quick** (shorter runs)' : ''}; ${Math.round(report.durationSec)} s. Reproduce: \`${report.command}\`.`,
    '',
    'Every ratio is taken per round between two things measured back to back in the same run, in mirrored order (A B, B A, …); median, min and max are over the rounds. A verdict says whether the goal holds in every round or by the median only.',
    '',
    '### Goals',
    '',
    goals(figures),
    '',
  ];
  for (const t of tablesOf(report)) {
    lines.push(`### ${t.title}`, '', table(t.columns, t.rows), '');
    for (const note of t.notes ?? []) lines.push(`- ${note}`);
    if (t.notes?.length) lines.push('');
  }
  if (options.summary) {
    lines.push('Every figure with its min and max, and the other benchmarks of the run: [bench/results/latest.md](bench/results/latest.md).', '');
    return lines.join('\n').replace(/^### /gm, '#### ');
  }
  lines.push(
    '### All figures',
    '',
    table(
      ['figure', 'median', 'min', 'max', 'unit', 'n'],
      figures.map((f) => [f.label, fmt(f.median, f.unit), fmt(f.min, f.unit), fmt(f.max, f.unit), f.unit, f.n]),
    ),
    '',
  );
  if (failed.length)
    lines.push('### Suites that failed in this run', '', ...failed.map(([name, s]) => `- \`${name}\`: ${'error' in s ? s.error.split('\n')[0] : ''}`), '');
  if (Object.keys(report.external).length) lines.push('### Other benchmarks in this run', '', external(report), '');
  return lines.join('\n');
}

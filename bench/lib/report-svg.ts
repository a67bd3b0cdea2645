/**
 * A hand-written SVG chart of the run (`bench/results/chart.svg`): duplicate effects per client
 * strategy, req/s per server peer, and oncely's goal ratios against their goals. No chart
 * library: horizontal bars with min–max whiskers.
 *
 * @module
 */
import type { Figure } from './figures.js';
import type { BenchReport } from './report-md.js';

interface Bar {
  readonly value: number;
  readonly min?: number;
  readonly max?: number;
  readonly series: number;
}

interface Row {
  readonly label: string;
  readonly bars: readonly Bar[];
  /** A short vertical mark at this value on the row (its goal). */
  readonly tick?: number;
}

interface Panel {
  readonly title: string;
  /** Legend entries: a name and the colour index its bars use. */
  readonly series: ReadonlyArray<readonly [name: string, color: number]>;
  readonly rows: readonly Row[];
  /** A vertical reference line (a goal), in value units. */
  readonly marker?: { readonly value: number; readonly label: string };
  readonly format: (v: number) => string;
}

const WIDTH = 1040;
const LABEL_W = 470;
const BAR_AREA = 440;
const BAR_H = 14;
const COLORS = ['#2563eb', '#f59e0b', '#10b981', '#ef4444'];

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** Labels longer than the label column are cut with an ellipsis (the full text is in latest.md). */
const fit = (s: string): string => (s.length > 72 ? `${s.slice(0, 71)}…` : s);

function panel(p: Panel, top: number): { svg: string; height: number } {
  const values = p.rows.flatMap((r) => r.bars.flatMap((b) => [b.value, b.max ?? b.value]));
  const maxValue = Math.max(p.marker?.value ?? 0, ...values.filter(Number.isFinite), 1e-9) * 1.08;
  const x = (v: number): number => LABEL_W + (Math.max(0, v) / maxValue) * BAR_AREA;
  const out: string[] = [`<text x="16" y="${top + 18}" class="title">${esc(p.title)}</text>`];
  p.series.forEach(([name, color], i) => {
    const lx = LABEL_W + i * 200;
    out.push(
      `<rect x="${lx}" y="${top + 28}" width="10" height="10" fill="${COLORS[color % COLORS.length]}"/>`,
      `<text x="${lx + 14}" y="${top + 37}" class="small">${esc(name)}</text>`,
    );
  });
  let y = top + 50;
  for (const row of p.rows) {
    const rowH = row.bars.length * (BAR_H + 3) + 8;
    out.push(`<text x="${LABEL_W - 8}" y="${y + rowH / 2}" class="label" text-anchor="end">${esc(fit(row.label))}</text>`);
    if (row.tick !== undefined) {
      const tx = x(row.tick).toFixed(1);
      out.push(`<line x1="${tx}" y1="${y - 3}" x2="${tx}" y2="${y + rowH - 5}" class="goal"/>`);
    }
    row.bars.forEach((bar, i) => {
      const by = y + i * (BAR_H + 3);
      const color = COLORS[bar.series % COLORS.length];
      const w = Number.isFinite(bar.value) ? x(bar.value) - LABEL_W : 0;
      out.push(`<rect class="bar" x="${LABEL_W}" y="${by}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${color}" rx="2"/>`);
      if (bar.min !== undefined && bar.max !== undefined && Number.isFinite(bar.min) && Number.isFinite(bar.max)) {
        const cy = by + BAR_H / 2;
        out.push(`<line x1="${x(bar.min).toFixed(1)}" y1="${cy}" x2="${x(bar.max).toFixed(1)}" y2="${cy}" class="whisker"/>`);
      }
      const label = Number.isFinite(bar.value) ? p.format(bar.value) : 'n/a';
      out.push(`<text x="${(Math.max(x(bar.value), x(bar.max ?? 0)) + 6).toFixed(1)}" y="${by + BAR_H - 3}" class="small">${esc(label)}</text>`);
    });
    y += rowH;
  }
  if (p.marker) {
    const mx = x(p.marker.value).toFixed(1);
    out.push(
      `<line x1="${mx}" y1="${top + 44}" x2="${mx}" y2="${y}" class="marker"/>`,
      `<text x="${mx}" y="${y + 12}" class="small" text-anchor="middle">${esc(p.marker.label)}</text>`,
    );
  }
  return { svg: out.join('\n'), height: y - top + 28 };
}

const find = (figures: readonly Figure[], id: string): Figure | undefined => figures.find((f) => f.id === id);

/**
 * Renders the chart.
 *
 * @example
 * ```ts
 * writeFileSync('bench/results/chart.svg', renderSvg(report));
 * ```
 */
export function renderSvg(report: BenchReport): string {
  const figures = Object.values(report.suites).flatMap((s) => ('figures' in s ? [...s.figures] : []));
  const panels: Panel[] = [];

  const clientRows: Row[] = [];
  for (const f of figures.filter((f) => f.id.startsWith('clients.') && f.id.endsWith('.duplicates'))) {
    const killed = find(figures, f.id.replace(/\.duplicates$/, '.duplicates_killed'));
    clientRows.push({
      label: f.label.split(':')[0] ?? f.id,
      bars: [
        { value: f.median, series: 0 },
        { value: killed?.median ?? Number.NaN, series: 1 },
      ],
    });
  }
  if (clientRows.length) {
    panels.push({
      title: 'Duplicate effects per 1 000 operations (lower is better)',
      series: [
        ['responses dropped', 0],
        ['dropped + client SIGKILLed', 1],
      ],
      rows: clientRows,
      format: (v) => String(Math.round(v)),
    });
  }

  const peerRows: Row[] = [];
  for (const f of figures.filter((f) => /^peers\.[^.]+\.first\.rps$/.test(f.id))) {
    const replay = find(figures, f.id.replace('.first.', '.replay.'));
    const bar = (g: Figure | undefined, series: number): Bar => ({
      value: g?.median ?? Number.NaN,
      min: g?.min ?? Number.NaN,
      max: g?.max ?? Number.NaN,
      series,
    });
    peerRows.push({ label: f.label.split(':')[0] ?? f.id, bars: [bar(f, 0), bar(replay, 1)] });
  }
  if (peerRows.length) {
    panels.push({
      title: 'Server peers: req/s, median with min–max (higher is better)',
      series: [
        ['first execution', 0],
        ['replay', 1],
      ],
      rows: peerRows,
      format: (v) => `${Math.round(v)}/s`,
    });
  }

  for (const op of ['>=', '<='] as const) {
    const goalRows = figures
      .filter((f) => f.goal?.op === op)
      .map((f) => ({
        label: `${f.label} (goal ${op} ${f.goal!.value})`,
        bars: [{ value: f.median, min: f.min, max: f.max, series: f.pass ? 2 : 3 }],
        tick: f.goal!.value,
      }));
    if (!goalRows.length) continue;
    panels.push({
      title:
        op === '>=' ? 'oncely ratios with a floor (higher is better; black tick = goal)' : 'oncely ratios with a ceiling (lower is better; black tick = goal)',
      series: [
        ['goal met', 2],
        ['goal missed', 3],
      ],
      rows: goalRows,
      format: (v) => `${v.toFixed(2)}×`,
      marker: { value: 1, label: '1×' },
    });
  }

  let top = 40;
  const bodies: string[] = [];
  for (const p of panels) {
    const rendered = panel(p, top);
    bodies.push(rendered.svg);
    top += rendered.height;
  }
  const subtitle = `Node ${report.node} · ${report.machine.cpu} × ${report.machine.cores} · commit ${report.commit}${report.quick ? ' · --quick' : ''}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${top + 10}" viewBox="0 0 ${WIDTH} ${top + 10}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">
<style>
.title { font-size: 15px; font-weight: 600; fill: #111827; }
.label { font-size: 12px; fill: #374151; dominant-baseline: middle; }
.small { font-size: 11px; fill: #4b5563; }
.whisker { stroke: #111827; stroke-width: 1.2; }
.marker { stroke: #6b7280; stroke-dasharray: 4 3; }
.goal { stroke: #111827; stroke-width: 2.5; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="16" y="24" class="title">oncely benchmarks</text>
<text x="${WIDTH - 16}" y="24" class="small" text-anchor="end">${esc(subtitle)}</text>
${bodies.join('\n')}
</svg>
`;
}

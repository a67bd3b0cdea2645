/**
 * `npm run bench`: runs every benchmark, each in its own process, and writes
 * `bench/results/latest.json`, `bench/results/latest.md` and `bench/results/chart.svg`.
 *
 * Order: the correctness suites (peer scenarios, client duplicates — counts, not timings) run
 * side by side first; then every timing suite runs alone, one after the other, so that no two
 * timings share the machine. Other engineers' benchmarks (bench/journal.ts, upload.ts,
 * postgres.ts) run last, and their JSON is folded in.
 *
 * Options: `--quick` (shorter loads, fewer operations: a few minutes), `--only a,b` (suite
 * names), `--no-external` (skip the other benchmarks), `--render` (re-render the Markdown and
 * SVG from the existing latest.json without measuring). A full run also refreshes the results
 * between the `bench:results` markers of docs/benchmarks.md (the README links there).
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { SuiteResult } from './lib/figures.js';
import { ROOT, TSX, runJson } from './lib/proc.js';
import { renderMarkdown, type BenchReport } from './lib/report-md.js';
import { renderSvg } from './lib/report-svg.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'no-external': { type: 'boolean', default: false },
    render: { type: 'boolean', default: false },
  },
});
const RESULTS = join(ROOT, 'bench/results');
mkdirSync(RESULTS, { recursive: true });

const PAGE = join(ROOT, 'docs/benchmarks.md');
const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/**
 * Replaces only the text between the two bench markers of docs/benchmarks.md (the generated
 * results), so that a full run keeps the published tables in step with latest.md. Quick and
 * partial runs leave the page alone: their figures are not the ones to publish. A page without
 * its markers is an error, not a silent skip: the published figures would go stale unseen.
 */
function updatePage(markdown: string): void {
  const text = readFileSync(PAGE, 'utf8');
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${PAGE} lacks the ${START} … ${END} markers the results go between`);
  // The summary's links are written from the repository's root; the page lives in docs/.
  const relinked = markdown.trim().replaceAll('](bench/', '](../bench/');
  writeFileSync(PAGE, `${text.slice(0, from + START.length)}\n${relinked}\n${text.slice(to)}`);
  console.log('updated the results in docs/benchmarks.md');
}

function render(report: BenchReport, publish: boolean): void {
  const markdown = renderMarkdown(report);
  writeFileSync(join(RESULTS, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(RESULTS, 'latest.md'), markdown);
  writeFileSync(join(RESULTS, 'chart.svg'), renderSvg(report));
  console.log(`wrote bench/results/latest.json, latest.md, chart.svg`);
  if (publish) updatePage(renderMarkdown(report, { summary: true }));
}

if (values.render) {
  const saved = JSON.parse(readFileSync(join(RESULTS, 'latest.json'), 'utf8')) as BenchReport;
  render(saved, !saved.quick && saved.command === 'npm run bench');
  process.exit(0);
}

const CORRECTNESS = ['peer-scenarios', 'clients'];
const TIMING = ['client-latency', 'server', 'scale', 'peer-throughput'];
const EXTERNAL = ['journal', 'upload', 'postgres'];
/**
 * Arguments the runner gives the other benchmarks, so that the whole run stays within minutes:
 * the uploader's default of 100 000 rows at three concurrencies alone takes longer than that
 * on a shared 2-core machine (run `npx tsx bench/upload.ts` for its full figures).
 */
const EXTERNAL_ARGS: Readonly<Record<string, { readonly full: readonly string[]; readonly quick: readonly string[] }>> = {
  upload: { full: ['--rows', '5000', '--dry-rows', '200000'], quick: ['--rows', '2000', '--dry-rows', '50000'] },
};
/**
 * The other benchmarks keep the 2-s loads they were written for (1 s with `--quick`; unless
 * `BENCH_LOAD_SECONDS` is set): the suites' longer, settled rounds (`lib/figures.ts`) would
 * more than double their time, and their figures carry no goal of the Goals table.
 */
const EXTERNAL_ENV = { BENCH_LOAD_SECONDS: process.env['BENCH_LOAD_SECONDS'] ?? (values.quick ? '1' : '2') };
/** No other benchmark may hold the run longer than this. */
const EXTERNAL_TIMEOUT_MS = values.quick ? 180_000 : 300_000;
const only = values.only?.split(',').map((s) => s.trim());
const wanted = (name: string): boolean => only === undefined || only.includes(name);
const env = values.quick ? { BENCH_QUICK: '1' } : {};
const started = Date.now();
const loadAtStart = loadavg();

async function suite(name: string): Promise<SuiteResult | { error: string }> {
  const t = Date.now();
  console.log(`▶ ${name}`);
  try {
    const result = await runJson<SuiteResult>([...TSX, join(ROOT, `bench/suites/${name}.ts`)], env);
    console.log(`✓ ${name} (${Math.round((Date.now() - t) / 1000)} s)`);
    return result;
  } catch (error) {
    console.error(`✗ ${name}: ${(error as Error).message}`);
    return { error: (error as Error).message.slice(0, 2000) };
  }
}

/** Another engineer's benchmark: run it, then take its results file, else its last JSON line. */
async function external(name: string): Promise<unknown> {
  const script = join(ROOT, `bench/${name}.ts`);
  if (!existsSync(script)) return { skipped: `bench/${name}.ts does not exist in this checkout` };
  const file = join(RESULTS, `${name}.json`);
  const before = existsSync(file) ? statSync(file).mtimeMs : 0;
  const t = Date.now();
  console.log(`▶ bench/${name}.ts`);
  let printed: unknown;
  try {
    const extra = EXTERNAL_ARGS[name]?.[values.quick ? 'quick' : 'full'] ?? [];
    printed = await runJson<unknown>([...TSX, script, ...extra], { ...env, ...EXTERNAL_ENV }, EXTERNAL_TIMEOUT_MS);
  } catch (error) {
    // A benchmark that prints a table rather than JSON is kept as its text output.
    const message = (error as Error).message;
    const output = message.includes('is not JSON') ? message.slice(message.indexOf('\n') + 1) : message;
    printed = { output: output.slice(-3000) };
  }
  console.log(`✓ bench/${name}.ts (${Math.round((Date.now() - t) / 1000)} s)`);
  if (existsSync(file) && statSync(file).mtimeMs > before) return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  return printed;
}

const suites: Record<string, SuiteResult | { error: string }> = {};
const correctness = await Promise.all(CORRECTNESS.filter(wanted).map(async (name) => [name, await suite(name)] as const));
for (const [name, result] of correctness) suites[name] = result;
for (const name of TIMING.filter(wanted)) suites[name] = await suite(name);
const externals: Record<string, unknown> = {};
if (!values['no-external']) for (const name of EXTERNAL.filter(wanted)) externals[name] = await external(name);

const git = (...args: string[]): string => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
const dirty = git('status', '--porcelain', '--untracked-files=no').length > 0;
const cpu = cpus();
const report: BenchReport = {
  generatedAt: new Date().toISOString(),
  command: `npm run bench${values.quick ? ' -- --quick' : ''}${values.only ? ` -- --only ${values.only}` : ''}`,
  quick: values.quick ?? false,
  durationSec: (Date.now() - started) / 1000,
  machine: {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    loadAverageAtStart: loadAtStart.map((l) => Math.round(l * 100) / 100),
  },
  node: process.version,
  commit: `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' (with uncommitted changes)' : ''}`,
  suites,
  external: externals,
};
render(report, !values.quick && values.only === undefined);

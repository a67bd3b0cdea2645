#!/usr/bin/env node
/**
 * `npm run model`: every spin check of docs/model, in a temporary directory.
 *
 * Each row generates a verifier with `spin -a`, compiles it with gcc and runs it. The models as
 * the code is must pass; every mutant must fail, with a counterexample to the property it
 * targets (a check that cannot fail proves nothing). Any other verdict exits non-zero.
 *
 * Usage: node docs/model/check.mjs [--keep] [row name substring...]
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * One verification run.
 * - `defines`: passed to spin's preprocessor (`MUTATION`, `CHECK`, ...).
 * - `mode`: `safety` (assertions and invalid end states, `-DSAFETY`) or `liveness` (the model's
 *   `ltl` formula, acceptance cycles under weak fairness: `pan -a -f`).
 * - `property`: for a `violation`, the property the counterexample must break: `Pn`/`Kn` is the
 *   assertion built with `ON(n)`, `P6` an acceptance cycle.
 * - `expect`: `pass`, `violation` (a mutant), or `finding` (the model of the code as it is
 *   breaks the property: a known gap, documented in README.md; it fails here the day it is fixed).
 */
const rows = [
  { name: 'server', model: 'server.pml', defines: [], mode: 'safety', property: 'P1-P5', expect: 'pass', big: true },
  { name: 'server liveness', model: 'server.pml', defines: ['LIVENESS'], mode: 'liveness', property: 'P6', expect: 'pass', big: true },
  { name: 'M1 takeover without the lease condition', model: 'server.pml', defines: ['MUTATION=1', 'CHECK=3'], mode: 'safety', property: 'P3', expect: 'violation' },
  { name: 'M2 response stored before the last phase', model: 'server.pml', defines: ['MUTATION=2', 'CHECK=2'], mode: 'safety', property: 'P2', expect: 'violation' },
  { name: 'M3 work committed apart from its recovery point', model: 'server.pml', defines: ['MUTATION=3', 'CHECK=1'], mode: 'safety', property: 'P1', expect: 'violation' },
  { name: 'M4 lease shorter than a phase, no fencing', model: 'server.pml', defines: ['MUTATION=4', 'CHECK=1'], mode: 'safety', property: 'P1', expect: 'violation' },
  // Control: with no live owner's lease running out, the unfenced writes of M4 do no harm; the
  // fence is what makes a lease shorter than a phase (a stalled owner) safe.
  { name: 'M4 control: no lease runs out under a live owner', model: 'server.pml', defines: ['MUTATION=4', 'MAXSTALL=0'], mode: 'safety', property: 'P1-P5', expect: 'pass', big: true },
  { name: 'M4 (same mutant) seen by a client', model: 'server.pml', defines: ['MUTATION=4', 'CHECK=4'], mode: 'safety', property: 'P4', expect: 'violation' },
  { name: 'M5 a fresh external key per attempt', model: 'server.pml', defines: ['MUTATION=5', 'CHECK=2'], mode: 'safety', property: 'P2', expect: 'violation' },
  { name: 'M6 an unknown outcome stored as failed', model: 'server.pml', defines: ['MUTATION=6', 'CHECK=5'], mode: 'safety', property: 'P5', expect: 'violation' },
  { name: 'M7 takeover of released rows only', model: 'server.pml', defines: ['MUTATION=7', 'LIVENESS'], mode: 'liveness', property: 'P6', expect: 'violation' },
  { name: 'journal one key', model: 'journal.pml', defines: ['CHECK=1'], mode: 'safety', property: 'K1', expect: 'pass' },
  { name: 'journal no re-send once settled', model: 'journal.pml', defines: ['CHECK=2'], mode: 'safety', property: 'K2', expect: 'pass' },
  { name: 'M11 a key minted for every attempt', model: 'journal.pml', defines: ['MUTATION=11', 'CHECK=1'], mode: 'safety', property: 'K1', expect: 'violation' },
  { name: 'M12 refusal settles failed if this chain sent nothing', model: 'journal.pml', defines: ['MUTATION=12', 'CHECK=3'], mode: 'safety', property: 'K3', expect: 'violation' },
  { name: 'M13 claim read and written in two transactions', model: 'journal.pml', defines: ['MUTATION=13', 'CHECK=2'], mode: 'safety', property: 'K2', expect: 'violation' },
  { name: 'M14 claim granted on a settled record', model: 'journal.pml', defines: ['MUTATION=14', 'CHECK=2', 'PREPARED=1'], mode: 'safety', property: 'K2', expect: 'violation' },
  { name: 'journal prepared, sent by two processes', model: 'journal.pml', defines: ['PREPARED=1'], mode: 'safety', property: 'K1-K3', expect: 'pass' },
  { name: 'M16 prepared: marked submitted before it is claimed', model: 'journal.pml', defines: ['MUTATION=16', 'CHECK=3', 'PREPARED=1'], mode: 'safety', property: 'K3', expect: 'violation' },
  { name: 'journal an unknown outcome never failed', model: 'journal.pml', defines: ['CHECK=3'], mode: 'safety', property: 'K3', expect: 'pass' },
  { name: 'M15 refusal trusts a record created here, put() unclaimed (F1 as it was)', model: 'journal.pml', defines: ['MUTATION=15', 'CHECK=3'], mode: 'safety', property: 'K3', expect: 'violation' },
  { name: 'F2 journal: a live holder\'s claim runs out', model: 'journal.pml', defines: ['CHECK=2', 'STALL=1'], mode: 'safety', property: 'K2', expect: 'finding' },
  { name: 'F2 journal: a live holder\'s claim runs out (K3)', model: 'journal.pml', defines: ['CHECK=3', 'STALL=1'], mode: 'safety', property: 'K3', expect: 'finding' },
];

function run(command, args, cwd) {
  const started = performance.now();
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { ...result, ms: performance.now() - started };
}

function requireTool(command, args, hint) {
  const probe = spawnSync(command, args, { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    console.error(`model: \`${command}\` is not installed or does not run (${probe.error?.message ?? `exit ${probe.status}`}); ${hint}`);
    process.exit(2);
  }
  return `${probe.stdout}${probe.stderr}`.split('\n')[0].trim();
}

/** What pan said: errors, states, depth of the counterexample, memory, time. */
function parsePan(text) {
  const number = (re) => {
    const match = re.exec(text);
    return match ? Number(match[1]) : undefined;
  };
  const violated = /assertion violated (.*) \(at depth (\d+)\)/.exec(text);
  const cycle = /acceptance cycle \(at depth (\d+)\)/.exec(text);
  const deadlock = /invalid end state \(at depth (\d+)\)/.exec(text);
  return {
    errors: number(/errors: (\d+)/),
    stored: number(/(\d+) states, stored/),
    visited: number(/states, stored \(([\d.e+]+) visited\)/),
    transitions: number(/(\d+) transitions/),
    memoryMb: number(/([\d.]+)\s+total actual memory usage/),
    seconds: number(/elapsed time ([\d.e+-]+) seconds/),
    assertion: violated?.[1],
    depth: Number(violated?.[2] ?? cycle?.[1] ?? deadlock?.[1] ?? NaN),
    kind: violated ? 'assertion' : cycle ? 'acceptance cycle' : deadlock ? 'invalid end state' : undefined,
    incomplete: /max search depth too small|Search not completed/.test(text),
  };
}

/** Whether a counterexample breaks `property`: `ON(n)` expands to `((n==0)||(n==n))` in pan's message. */
function breaks(parsed, property) {
  if (property === 'P6') return parsed.kind === 'acceptance cycle';
  const n = property.slice(1);
  return parsed.kind === 'assertion' && parsed.assertion.includes(`((${n}==0)||(${n}==${n}))`);
}

function check(row, work) {
  const dir = join(work, row.name.replace(/[^A-Za-z0-9]+/g, '-'));
  mkdirSync(dir);
  cpSync(join(here, row.model), join(dir, row.model));
  const spin = run('spin', [...row.defines.map((d) => `-D${d}`), '-a', row.model], dir);
  if (spin.status !== 0) return { error: `spin -a failed:\n${spin.stdout}${spin.stderr}` };
  // -O2 where the search is exhaustive (millions of states); a mutant stops at its first
  // counterexample within a few thousand states, and -O0 builds its verifier 6x faster.
  // COLLAPSE takes the safety run's memory from 480 to 300 MB (the liveness run gains little from it).
  const cflags = [
    row.big ? '-O2' : '-O0',
    '-w',
    ...(row.mode === 'safety' ? ['-DSAFETY'] : ['-DNFAIR=3']),
    ...(row.big && row.mode === 'safety' ? ['-DCOLLAPSE'] : []),
  ];
  const gcc = run('gcc', [...cflags, '-o', 'pan', 'pan.c'], dir);
  if (gcc.status !== 0) return { error: `gcc failed:\n${gcc.stderr}` };
  const panArgs = ['-m200000', ...(row.mode === 'liveness' ? ['-a', '-f'] : [])];
  // `times` after pan: the CPU time of the search itself, whatever else shares the machine.
  const pan = run('sh', ['-c', `./pan ${panArgs.join(' ')}; times`], dir);
  const parsed = parsePan(`${pan.stdout}${pan.stderr}`);
  const cpu = /\n(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(pan.stdout);
  parsed.cpuSeconds = cpu ? Number(cpu[1]) * 60 + Number(cpu[2]) + Number(cpu[3]) * 60 + Number(cpu[4]) : undefined;
  const found = (parsed.errors ?? 0) > 0;
  let ok;
  let verdict;
  if (parsed.errors === undefined) {
    ok = false;
    verdict = 'pan did not finish';
  } else if (!found) {
    verdict = parsed.incomplete ? 'pass (incomplete search)' : 'pass';
    ok = row.expect === 'pass' && !parsed.incomplete;
  } else {
    verdict = `${parsed.kind ?? 'error'}${breaks(parsed, row.property) ? '' : ' (another property)'}`;
    ok = row.expect !== 'pass' && breaks(parsed, row.property);
  }
  return { ...parsed, verdict, ok, ms: spin.ms + gcc.ms + pan.ms, panOutput: `${pan.stdout}${pan.stderr}`, flags: `gcc ${cflags.join(' ')}; pan ${panArgs.join(' ')}` };
}

function main() {
  const args = process.argv.slice(2);
  const keep = args.includes('--keep');
  const filters = args.filter((arg) => !arg.startsWith('--'));
  const spinVersion = requireTool('spin', ['-V'], 'install it with `apt-get install spin` (Debian/Ubuntu package)');
  requireTool('gcc', ['--version'], 'install a C compiler (`apt-get install gcc`) to compile spin\'s verifier');
  const selected = rows.filter((row) => filters.length === 0 || filters.some((f) => row.name.includes(f)));
  const work = mkdtempSync(join(tmpdir(), 'oncely-model-'));
  console.log(`${spinVersion}; working in ${work}`);
  const table = [];
  let failures = 0;
  const started = performance.now();
  try {
    for (const row of selected) {
      const result = check(row, work);
      if (result.error) {
        failures += 1;
        console.error(`\n${row.name}: ${result.error}`);
        table.push([row.name, row.property, row.expect, 'ERROR', '', '', '', '', '']);
        continue;
      }
      if (!result.ok) {
        failures += 1;
        console.error(`\n${row.name}: unexpected verdict "${result.verdict}" (expected ${row.expect} of ${row.property}); pan said:\n${result.panOutput}`);
      }
      const states = result.visited !== undefined ? `${result.stored} (${result.visited} visited)` : String(result.stored);
      table.push([
        row.name,
        row.property,
        row.expect,
        `${result.ok ? '' : 'UNEXPECTED: '}${result.verdict}`,
        states,
        Number.isNaN(result.depth) ? '' : String(result.depth),
        result.memoryMb === undefined ? '' : result.memoryMb.toFixed(0),
        result.cpuSeconds === undefined ? '?' : result.cpuSeconds.toFixed(2),
        (result.ms / 1000).toFixed(1),
      ]);
    }
  } finally {
    if (keep) console.log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const header = ['check', 'property', 'expected', 'verdict', 'states stored', 'trail', 'MB', 'pan CPU s', 'wall s (spin+gcc+pan)'];
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  console.log(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of table) console.log(line(row));
  console.log(`\n${table.length - failures}/${table.length} as expected in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exit(failures === 0 ? 0 : 1);
}

main();

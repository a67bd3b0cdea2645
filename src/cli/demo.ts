/**
 * `oncely demo` (what `npm start` runs): a reference server on embedded SQLite in a temporary
 * directory, crashed, timed out and made unavailable by injected faults, supervised and
 * restarted; concurrent checkout workers paying through the oncely client with duplicate
 * sends; one client process SIGKILLed and resumed. Then the server's own records are checked:
 * the demo exits 0 only when ledger entries = rail charges = payments made.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryJournal } from '../journal/memory.js';
import { parseCommandArgs, readInteger, reportParseFailure, usageError } from './args.js';
import { runClientCrash, type ClientCrashResult } from './demo-client-crash.js';
import { createRandom, type Random } from './demo-random.js';
import { renderVerification, verifyDemo } from './demo-report.js';
import { startSupervisedServer, type SupervisedServer } from './demo-server.js';
import { emptyStats, planPayments, runWorkload } from './demo-workload.js';
import { createProgress } from './upload-progress.js';

const spec = {
  name: 'demo',
  description:
    'Run the exactly-once demo: a reference server under injected crashes, timeouts and 503s, concurrent clients ' +
    "with duplicate sends, one client process killed and resumed, then a verification table from the server's ledger " +
    'and rail. Exit code 0 only when ledger entries = rail charges = payments.',
  options: {
    payments: { type: 'string', value: 'N', help: 'payments to make (default 500)' },
    seed: { type: 'string', value: 'S', help: 'seed of every random choice, for a reproducible run (default: random, printed)' },
    concurrency: { type: 'string', value: 'N', help: 'concurrent checkout workers (default 8)' },
    json: { type: 'boolean', help: 'print the verification as JSON on stdout' },
    'keep-dir': { type: 'boolean', help: 'keep the temporary directory (server database, client journal) for inspection' },
  },
} as const;

const TOKEN = 'test_acme';
const RECOVERY_POINTS = ['H1_DONE', 'EXT1_SENT', 'EXT1_DONE', 'H2_DONE', 'EXT2_SENT', 'EXT2_DONE'] as const;

/**
 * The faults the demo injects: crashes after two randomly chosen recovery points (about
 * `payments / 100` crashes expected in all, at least 2, at most 5: each restart costs a process
 * start, and the run should stay under a minute),
 * rail timeouts (the rail applied the charge but the answer is lost: `202`), risk-check
 * 503s, and a rail 25 ms slower than instant, so that a duplicate sent at the same moment finds
 * the first one still in flight (`409`) rather than already finished.
 *
 * @example
 * ```ts
 * demoFaults(createRandom('42'), 500); // 'crash-after:EXT2_SENT:0.0050,crash-after:H1_DONE:0.0050,timeout:ext2:0.04,unavailable:ext1:0.04,slow:ext2:25'
 * ```
 */
export function demoFaults(random: Random, payments: number): string {
  const first = random.pick(RECOVERY_POINTS);
  const second = random.pick(RECOVERY_POINTS.filter((point) => point !== first));
  const crashes = Math.min(5, Math.max(2, Math.round(payments / 100)));
  const p = Math.min(0.5, crashes / (2 * payments)).toFixed(4);
  return [`crash-after:${first}:${p}`, `crash-after:${second}:${p}`, 'timeout:ext2:0.04', 'unavailable:ext1:0.04', 'slow:ext2:25'].join(',');
}

/**
 * `oncely demo [--payments N] [--seed S] [--concurrency N] [--json]`.
 *
 * @example
 * ```ts
 * process.exitCode = await demo(['--payments', '200', '--seed', '7']);
 * ```
 */
export async function demo(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(argv, spec);
  if (!parsed.ok) return reportParseFailure(parsed);
  const payments = readInteger('payments', parsed.values.payments, 500, 1, 100_000);
  if (!payments.ok) return reportParseFailure(usageError(spec, payments.problem));
  const concurrency = readInteger('concurrency', parsed.values.concurrency, 8, 1, 256);
  if (!concurrency.ok) return reportParseFailure(usageError(spec, concurrency.problem));
  const seed = parsed.values.seed ?? String(Math.floor(Math.random() * 1_000_000));
  const json = parsed.values.json === true;
  const say = (line: string): void => {
    if (!json) console.log(line);
  };

  const random = createRandom(seed);
  const dir = mkdtempSync(join(tmpdir(), 'oncely-demo-'));
  const faults = demoFaults(random.fork('faults'), payments.value);
  say(`oncely demo: ${payments.value} payments, ${concurrency.value} workers, seed ${seed}`);
  say(`  server: oncely serve on SQLite in ${dir}, faults ${faults}`);

  let server: SupervisedServer;
  try {
    server = await startSupervisedServer({
      dbPath: join(dir, 'server.db'),
      faults,
      // A short lease, so a payment orphaned by a crash is taken over within a second.
      extraArgs: ['--lease', '1s', '--quiet'],
    });
  } catch (error) {
    console.error(`oncely demo: the reference server did not start: ${error instanceof Error ? error.message : String(error)}`);
    rmSync(dir, { recursive: true, force: true });
    return 1;
  }
  try {
    say(`  listening on ${server.url}; one client process will be killed and resumed\n`);
    const plans = planPayments(random.fork('plans'), 0, payments.value);
    const crashCount = Math.min(25, Math.max(2, Math.round(payments.value * 0.05)));
    const crashPlans = plans.slice(plans.length - Math.min(crashCount, plans.length - 1));
    const workPlans = plans.slice(0, plans.length - crashPlans.length);
    const stats = emptyStats();
    const progress = createProgress({ total: payments.value, stream: process.stderr, unit: 'payments' });
    let crashDone = 0;
    let workDone = 0;
    const counts = (): Record<string, number> => ({
      '409': stats.conflicts,
      '202': stats.unknown,
      '503': stats.unavailable,
      'server restarts': server.restarts(),
    });

    const [work, crash] = await Promise.all([
      runWorkload({
        url: server.url,
        token: TOKEN,
        plans: workPlans,
        concurrency: concurrency.value,
        stats,
        journal: memoryJournal(),
        onSettled: (succeeded) => {
          workDone = succeeded;
          progress.update(workDone + crashDone, counts());
        },
      }),
      runClientCrash({ url: server.url, token: TOKEN, plans: crashPlans, dir, stats }).then((result: ClientCrashResult) => {
        crashDone = result.resumedAll ? crashPlans.length : 0;
        return result;
      }),
    ]);
    progress.finish(workDone + crashDone, counts());

    const keys = [...work.keys.values(), ...crash.keys.values()];
    const verification = await verifyDemo({
      url: server.url,
      token: TOKEN,
      keys,
      stats,
      serverCrashes: server.restarts(),
      clientCrashes: crash.killed && crash.resumedAll ? 1 : 0,
    });
    const ok = verification.ok && keys.length === payments.value && work.unsettled === 0 && crash.resumedAll;
    if (json) {
      console.log(JSON.stringify({ seed, faults, ...verification, ok }, null, 2));
    } else {
      console.log(renderVerification({ ...verification, ok }));
      if (!crash.killed) {
        console.log(
          crashPlans.length === 0
            ? '  note: too few payments to spare some for the client crash'
            : '  note: the client process finished before it could be killed',
        );
      }
    }
    return ok ? 0 : 1;
  } finally {
    await server.stop();
    if (parsed.values['keep-dir'] === true) say(`  kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The demo's crash-test client, run as its own process by `demo-client-crash.ts`.
 *
 * - `run`: journals every planned payment in a SQLite journal (before any attempt), then pays
 *   them two at a time, printing one line per event. The parent SIGKILLs it halfway.
 * - `resume`: a fresh process on the same journal file calls `client.resume()` until nothing
 *   is pending, and prints a JSON summary.
 *
 * Protocol on stdout, one line each: `key <index> <key>`, `prepared`, `settled <index>`,
 * `stats <json>`, and in resume mode a final `summary <json>`.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createClient } from '../client/create-client.js';
import type { Operation } from '../client/operation-handle.js';
import { sqliteJournal } from '../journal/sqlite.node.js';
import { demoClientOptions, emptyStats, type PaymentPlan } from './demo-workload.js';

/** How long a crashed process's claim blocks its operations: short, so resume starts soon. */
const CLAIM_TTL_MS = 1_500;

async function runChild(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      mode: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      journal: { type: 'string' },
      plans: { type: 'string' },
    },
    strict: true,
  });
  const url = values.url ?? '';
  const token = values.token ?? '';
  const journal = sqliteJournal({ path: values.journal ?? '' });
  const stats = emptyStats();
  const client = createClient({ ...demoClientOptions(url, token, journal, stats), claimTtlMs: CLAIM_TTL_MS });
  const say = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };

  if (values.mode === 'run') {
    const plans = JSON.parse(readFileSync(values.plans ?? '', 'utf8')) as PaymentPlan[];
    const ops: Array<{ readonly plan: PaymentPlan; readonly op: Operation }> = [];
    for (const plan of plans) {
      const op = await client.prepare('POST', 'v1/payments', {
        json: { amount: plan.amount, currency: 'EUR', reference: plan.reference },
      });
      // The whole plan is ordered now: marked submitted, so the resuming process also pays the
      // ones this process is killed before sending (resume() skips operations only prepared).
      await journal.update(client.scope, op.key, { submittedAt: Date.now() });
      say(`key ${plan.index} ${op.key}`);
      ops.push({ plan, op });
    }
    say('prepared');
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ops.length) {
        const { plan, op } = ops[next]!;
        next += 1;
        await op.send().then(
          () => say(`settled ${plan.index}`),
          () => undefined,
        );
        say(`stats ${JSON.stringify(stats)}`);
      }
    };
    await Promise.all([worker(), worker()]);
    await journal.close();
    return 0;
  }

  // resume: the claims of the killed process run out after CLAIM_TTL_MS, so retry until none is left.
  const deadline = Date.now() + 60_000;
  const summary = { resumed: 0, succeeded: 0, failed: 0, pending: 0, stats };
  for (;;) {
    const outcomes = await client.resume();
    for (const outcome of outcomes) {
      if (outcome.state === 'succeeded') summary.succeeded += 1;
      else if (outcome.state === 'failed') summary.failed += 1;
      if (outcome.state !== 'skipped') summary.resumed += 1;
    }
    summary.pending = (await client.pending()).length;
    if (summary.pending === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  say(`summary ${JSON.stringify(summary)}`);
  await journal.close();
  return summary.pending === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runChild(process.argv.slice(2));
}

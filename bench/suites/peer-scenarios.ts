/**
 * Peer scenarios (correctness, no timing): the same payment handler behind every idempotency
 * layer — 100 identical requests at once, the same key with another body, and the server
 * SIGKILLed in the middle of the handler followed by a retry.
 *
 * Run alone: `node --import tsx bench/suites/peer-scenarios.ts` (the last stdout line is the JSON result).
 *
 * @module
 */
import { QUICK, emit, type ResultTable } from '../lib/figures.js';
import { concurrentDuplicates, crashMidHandler, keyReuse } from '../peers/scenarios.js';
import { PEER_LABELS } from '../peers/labels.js';

/** Lease of oncely and emulated Lambda timeout of Powertools in the crash scenario: the same for both. */
const CRASH_LEASE_MS = 3000;
const CRASH_WINDOW_MS = QUICK ? 8000 : 10_000;

/** Runs `task` over `items`, at most `limit` at a time, keeping the order of results. */
async function pooled<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) results[i] = await task(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

// Correctness, not timing: the peers' scenarios may overlap (each has its own servers and keys).
// The hand-written floor keeps the happy path only (no fingerprint, no in-flight answer): it is a cost, not a layer.
const layers = PEER_LABELS.filter(({ name }) => !name.startsWith('floor'));
const scenarioRows = await pooled(layers, 3, async ({ name, label }) => {
  try {
    const concurrent = await concurrentDuplicates(name);
    const reuse = await keyReuse(name);
    const crash = await crashMidHandler(name, { leaseMs: CRASH_LEASE_MS, windowMs: CRASH_WINDOW_MS });
    console.error(`peers: ${name} scenarios done`);
    return [
      label,
      concurrent.executions,
      Object.entries(concurrent.statuses)
        .map(([s, n]) => `${n}×${s}`)
        .join(' '),
      reuse.status,
      reuse.executions,
      crash.executions,
      crash.stuck ? `yes (${crash.finalStatus} for ${CRASH_WINDOW_MS / 1000} s)` : `no (${crash.recoveredAfterMs} ms)`,
    ];
  } catch (error) {
    // One peer's harness failure must not cost the other peers' rows; the row says what broke.
    console.error(`peers: ${name} failed: ${(error as Error).message}`);
    return [label, null, `harness error: ${(error as Error).message.split('\n')[0]}`, null, null, null, null];
  }
});

const scenarios: ResultTable = {
  id: 'peers.scenarios',
  title: 'Server peers: the same payment handler behind each idempotency layer',
  columns: [
    'layer',
    '100 identical at once → executions',
    'their statuses',
    'same key, other body → status',
    'executions after it',
    'SIGKILL mid-handler, retry → executions',
    'key stuck after restart?',
  ],
  rows: scenarioRows,
  notes: [
    `Crash: the server is SIGKILLed after the charge and before the response, restarted on the same state, and the request retried for ${CRASH_WINDOW_MS / 1000} s honouring Retry-After; oncely's lease and Powertools' emulated Lambda timeout are both ${CRASH_LEASE_MS / 1000} s.`,
    'Statuses for in-flight and key-reuse errors of @node-idempotency/core and Powertools come from the route wiring (409/422, as their framework packages map them); express-idempotency answers 417 itself.',
  ],
};

emit({ suite: 'peer-scenarios', figures: [], tables: [scenarios] });

/**
 * The demo's verification: what the server's ledger and the simulated rail say happened,
 * compared with what the demo asked for. The demo passes only when every payment it made is
 * in the ledger once and charged on the rail once.
 *
 * @module
 */
import type { AttemptStats } from './demo-workload.js';

/** The figures the demo prints. */
export interface DemoVerification {
  readonly operations: number;
  readonly attempts: number;
  readonly replays: number;
  readonly conflicts409: number;
  readonly unknown202: number;
  readonly unavailable503: number;
  readonly connectionErrors: number;
  readonly serverCrashesSurvived: number;
  readonly clientCrashesSurvived: number;
  readonly ledgerEntries: number;
  readonly railCharges: number;
  /** Ledger entries beyond the first for a key, plus rail charges beyond the first for a reference. */
  readonly duplicates: number;
  /** Payments the demo made that have no ledger entry. */
  readonly lost: number;
  /**
   * The same workload without oncely, at least: each replay answered a request (a retry after a
   * lost answer, a second tab, a reload) that a client sending no key would have paid again.
   */
  readonly duplicatesWithoutOncely: number;
  readonly ok: boolean;
}

interface LedgerBody {
  readonly count: number;
  readonly entries: ReadonlyArray<{ readonly payment_id: string; readonly idempotency_key: string }>;
}

interface RailBody {
  readonly count: number;
  readonly charges: ReadonlyArray<{ readonly charge_id: string; readonly reference: string }>;
}

async function getJson<T>(url: string, token: string): Promise<T> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return (await response.json()) as T;
}

function extra(values: readonly string[]): number {
  return values.length - new Set(values).size;
}

/** Inputs of {@link verifyDemo} besides the server's records. */
export interface VerifyInput {
  readonly url: string;
  readonly token: string;
  /** The key of every payment the demo made. */
  readonly keys: readonly string[];
  readonly stats: AttemptStats;
  readonly serverCrashes: number;
  readonly clientCrashes: number;
}

/**
 * Reads `GET /v1/ledger` and `GET /v1/rail/charges` and checks them against the demo's keys.
 *
 * @example
 * ```ts
 * const verification = await verifyDemo({ url, token: 'test_acme', keys, stats, serverCrashes: 4, clientCrashes: 1 });
 * if (!verification.ok) process.exitCode = 1;
 * ```
 */
export async function verifyDemo(input: VerifyInput): Promise<DemoVerification> {
  const base = input.url.endsWith('/') ? input.url : `${input.url}/`;
  const ledger = await getJson<LedgerBody>(new URL('v1/ledger?limit=100000', base).href, input.token);
  const rail = await getJson<RailBody>(new URL('v1/rail/charges', base).href, input.token);
  const ledgerKeys = ledger.entries.map((entry) => entry.idempotency_key);
  // Every demo payment has its own reference, so a reference charged twice is a double charge.
  const chargeRefs = rail.charges.map((charge) => charge.reference);
  const inLedger = new Set(ledgerKeys);
  const lost = input.keys.filter((key) => !inLedger.has(key)).length;
  const duplicates = extra(ledgerKeys) + extra(chargeRefs);
  const operations = input.keys.length;
  return {
    operations,
    attempts: input.stats.attempts,
    replays: input.stats.replays,
    conflicts409: input.stats.conflicts,
    unknown202: input.stats.unknown,
    unavailable503: input.stats.unavailable,
    connectionErrors: input.stats.networkErrors,
    serverCrashesSurvived: input.serverCrashes,
    clientCrashesSurvived: input.clientCrashes,
    ledgerEntries: ledger.count,
    railCharges: rail.count,
    duplicates,
    lost,
    // A replay settles the request chain it answers, so replays count chains, not attempts: a
    // request held (409) and then replayed is one payment too many without a key, not two.
    duplicatesWithoutOncely: input.stats.replays,
    ok: ledger.count === operations && rail.count === operations && duplicates === 0 && lost === 0,
  };
}

/**
 * Renders the verification as the table the demo prints.
 *
 * @example
 * ```ts
 * console.log(renderVerification(verification));
 * ```
 */
export function renderVerification(v: DemoVerification): string {
  const rows: Array<[string, number | string]> = [
    ['operations', v.operations],
    ['attempts', v.attempts],
    ['replays', v.replays],
    ['409 in flight', v.conflicts409],
    ['202 outcome unknown', v.unknown202],
    ['503 unavailable', v.unavailable503],
    ['connection errors (server killed on purpose)', v.connectionErrors],
    ['server crashes survived', v.serverCrashesSurvived],
    ['client crashes survived', v.clientCrashesSurvived],
    ['ledger entries', v.ledgerEntries],
    ['rail charges', v.railCharges],
    ['duplicates', v.duplicates],
    ['lost', v.lost],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, value]) => `  ${name.padEnd(width)}  ${String(value).padStart(7)}`);
  const verdict = v.ok
    ? `  PASS: ledger entries = rail charges = operations = ${v.operations}, no duplicates, nothing lost`
    : `  FAIL: ledger ${v.ledgerEntries}, rail ${v.railCharges}, operations ${v.operations}, duplicates ${v.duplicates}, lost ${v.lost}`;
  const naive =
    `  without oncely: at least ${v.duplicatesWithoutOncely} duplicate payments; each of the ${v.replays} replays ` +
    'answered a request that a client retrying without a key would have paid again';
  return ['', ...lines, '', verdict, naive, ''].join('\n');
}

/**
 * A small fake operation for the handler tests: H1 → external 1 (risk) → H2 → external 2 (rail)
 * → final (ledger), over a real SQLite KeyStore. The external systems keep their own counters,
 * honour their derived keys and can be told to time out, refuse or be unavailable.
 */
import { createIdempotencyHandler } from '../../src/server/index.js';
import { problemBody, ProblemType } from '../../src/server/problems.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { IdempotencyHandlerOptions, IdempotentOperation, ProbeOutcome } from '../../src/server/index.js';
import type { KeyStore } from '../../src/server/store.js';
import type { ExternalOutcome, StepContext } from '../../src/server/types.js';

/** How the next call to a fake external system behaves. */
export type ExternalMode =
  | 'ok'
  /** Applies the instruction, then the answer is lost. */
  | 'timeout-after-apply'
  /** The instruction never arrives. */
  | 'timeout-before-apply'
  | 'unavailable'
  /** The connection breaks after the instruction was applied: the call throws. */
  | 'throws-after-apply'
  /** Refuses amounts above 1 000 000 (a decline). */
  | 'declining';

export interface FakeExternal {
  /** Instructions applied, by derived key (each at most once: the system honours its keys). */
  readonly applied: Map<string, string>;
  /** Calls received, including duplicates and lost ones. */
  calls: number;
  probes: number;
  /** Modes for the next calls, consumed in order; then `ok`. */
  readonly script: ExternalMode[];
  /** When true the probe cannot tell (answers unknown). */
  probeBlind: boolean;
  /** Resolves each call only when this promise resolves (lets a test hold a request in flight). */
  gate: Promise<void> | undefined;
}

export interface PaymentInput {
  readonly amount: number;
}

function fakeExternal(): FakeExternal {
  return { applied: new Map(), calls: 0, probes: 0, script: [], probeBlind: false, gate: undefined };
}

function externalStep(system: number, sys: FakeExternal, name: string) {
  return {
    kind: 'external' as const,
    system,
    sent: `EXT${system}_SENT`,
    done: `EXT${system}_DONE`,
    async call(ctx: StepContext<PaymentInput>, kn: string): Promise<ExternalOutcome> {
      sys.calls += 1;
      if (sys.gate) await sys.gate;
      const mode = sys.script.shift() ?? 'ok';
      if (mode === 'unavailable') return { outcome: 'unavailable', retryAfterMs: 2000 };
      if (mode === 'timeout-before-apply') return { outcome: 'unknown' };
      if (name === 'charge' && ctx.input.amount > 1_000_000) {
        const body = JSON.stringify(problemBody(ProblemType.Declined, 'amount above the limit'));
        return { outcome: 'refused', response: { status: 402, headers: { 'content-type': 'application/problem+json' }, body } };
      }
      if (!sys.applied.has(kn)) sys.applied.set(kn, `${name}_${sys.applied.size + 1}`);
      if (mode === 'timeout-after-apply') return { outcome: 'unknown' };
      if (mode === 'throws-after-apply') throw new Error('ECONNRESET');
      return { outcome: 'done', data: { [name]: sys.applied.get(kn) } };
    },
    async probe(_ctx: StepContext<PaymentInput>, kn: string): Promise<ProbeOutcome> {
      sys.probes += 1;
      if (sys.probeBlind) return { outcome: 'unknown' };
      const id = sys.applied.get(kn);
      return id === undefined ? { outcome: 'absent' } : { outcome: 'done', data: { [name]: id } };
    },
  };
}

export const APP_SCHEMA = {
  sqlite: `CREATE TABLE IF NOT EXISTS step_runs (client_id TEXT NOT NULL, key TEXT NOT NULL, step TEXT NOT NULL);
           CREATE TABLE IF NOT EXISTS ledger (client_id TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL, charge TEXT NOT NULL);`,
  postgres: `CREATE TABLE IF NOT EXISTS step_runs (client_id TEXT NOT NULL, key TEXT NOT NULL, step TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS ledger (client_id TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL, charge TEXT NOT NULL);`,
};

export function paymentOperation(risk: FakeExternal, rail: FakeExternal): IdempotentOperation<PaymentInput> {
  const local = (point: string) => ({
    kind: 'local' as const,
    point,
    async run(ctx: StepContext<PaymentInput>, tx: Parameters<IdempotentOperation<PaymentInput>['final']['run']>[1]) {
      await tx.run('INSERT INTO step_runs (client_id, key, step) VALUES ($1, $2, $3)', [ctx.clientId, ctx.key, point]);
      return { [point]: true };
    },
  });
  return {
    method: 'POST',
    path: '/v1/payments',
    parse(body) {
      const amount = (body as { amount?: unknown } | undefined)?.amount;
      return typeof amount === 'number' && Number.isInteger(amount) && amount >= 1
        ? { ok: true, input: { amount } }
        : { ok: false, detail: 'amount must be an integer ≥ 1' };
    },
    steps: [local('H1_DONE'), externalStep(1, risk, 'risk'), local('H2_DONE'), externalStep(2, rail, 'charge')],
    final: {
      kind: 'final',
      async run(ctx, tx) {
        const charge = String(ctx.data.charge);
        await tx.run('INSERT INTO ledger (client_id, key, amount, charge) VALUES ($1, $2, $3, $4)', [ctx.clientId, ctx.key, ctx.input.amount, charge]);
        const body = JSON.stringify({ id: `pay_${ctx.key}`, amount: ctx.input.amount, charge, at: Math.random() });
        return { status: 201, headers: { 'content-type': 'application/json' }, body };
      },
    },
  };
}

export const TOKENS: Readonly<Record<string, string>> = { test_acme: 'acme', test_globex: 'globex' };

export interface TestApp {
  readonly store: KeyStore;
  readonly handler: ReturnType<typeof createIdempotencyHandler>;
  readonly risk: FakeExternal;
  readonly rail: FakeExternal;
  post(body: unknown, init?: { key?: string | null; token?: string | null; path?: string; raw?: string; headers?: Record<string, string> }): Promise<Response>;
  count(table: 'step_runs' | 'ledger', where?: string, params?: unknown[]): Promise<number>;
}

export async function createTestApp(
  options: Partial<Omit<IdempotencyHandlerOptions, 'store' | 'operations' | 'authenticate'>> & { store?: KeyStore } = {},
): Promise<TestApp> {
  const store = options.store ?? sqliteKeyStore({ path: ':memory:' });
  await store.migrate?.(APP_SCHEMA);
  const risk = fakeExternal();
  const rail = fakeExternal();
  const handler = createIdempotencyHandler({
    ...options,
    store,
    operations: [paymentOperation(risk, rail)],
    authenticate: (request) => TOKENS[(request.headers.get('authorization') ?? '').replace(/^Bearer /, '')] ?? null,
  });
  return {
    store,
    handler,
    risk,
    rail,
    async post(body, init = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
      if (init.key !== null) headers['idempotency-key'] = init.key ?? 'key-1';
      if (init.token !== null) headers.authorization = `Bearer ${init.token ?? 'test_acme'}`;
      const request = new Request(`http://oncely.test${init.path ?? '/v1/payments'}`, {
        method: 'POST',
        headers,
        body: init.raw ?? JSON.stringify(body),
      });
      const response = await handler.handle(request);
      if (!response) throw new Error('no operation matched');
      return response;
    },
    async count(table, where = '1 = 1', params = []) {
      const row = await store.transaction((tx) => tx.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, params));
      return Number(row?.n ?? 0);
    },
  };
}

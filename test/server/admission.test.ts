/**
 * The admission core: `classify` over every branch of PROTOCOL.md's response matrix (a table of
 * rows and cached keys against this request), and the driver `admitRequest` that both front ends
 * run — waiting once and deciding again, taking over, the lost takeover race, the cache.
 */
import { describe, expect, it } from 'vitest';
import { admitRequest, classify, fromCache, rememberFinished, type AdmissionPolicy, type Found } from '../../src/server/admission.js';
import { createReplayCache, type CachedKey } from '../../src/server/replay-cache.js';
import type { AdmitResult, KeyRow, Lease } from '../../src/server/store/types.js';

const HASH = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const RESPONSE = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}' };

function row(overrides: Partial<KeyRow> = {}): KeyRow {
  return {
    clientId: 'acme',
    key: 'k1',
    requestHash: HASH,
    endpoint: 'POST /v1/payments',
    requestBody: '{}',
    state: 'started',
    recoveryPoint: null,
    data: {},
    response: null,
    leaseRemainingMs: 8000,
    attempts: 0,
    createdAt: 0,
    expiresAt: 86_400_000,
    ...overrides,
  };
}

const cached: CachedKey = {
  requestHash: HASH,
  request: '',
  endpoint: 'POST /v1/payments',
  response: RESPONSE,
  replayHeaders: { 'content-type': 'application/json', 'idempotency-key': 'k1', 'idempotency-replay': 'true' },
  expiresAt: 86_400_000,
};

describe('classify', () => {
  const cases: ReadonlyArray<{ name: string; found: Found; requestHash?: string; inFlightWaitMs?: number; prefer?: string | null; expected: unknown }> = [
    {
      name: 'a started row with another fingerprint is a mismatch (422), before its state is looked at',
      found: row(),
      requestHash: OTHER,
      expected: { branch: 'mismatch', endpoint: 'POST /v1/payments' },
    },
    {
      name: 'a finished row with another fingerprint is a mismatch',
      found: row({ state: 'finished', response: RESPONSE, leaseRemainingMs: null }),
      requestHash: OTHER,
      expected: { branch: 'mismatch', endpoint: 'POST /v1/payments' },
    },
    {
      name: 'a cached key with another fingerprint is a mismatch',
      found: cached,
      requestHash: OTHER,
      expected: { branch: 'mismatch', endpoint: 'POST /v1/payments' },
    },
    {
      name: 'a finished row is replayed with its stored response',
      found: row({ state: 'finished', response: RESPONSE, leaseRemainingMs: null }),
      expected: { branch: 'replay', response: RESPONSE },
    },
    { name: 'a cached key is replayed', found: cached, expected: { branch: 'replay', response: RESPONSE } },
    {
      name: 'a live lease is waited for, up to inFlightWaitMs',
      found: row({ leaseRemainingMs: 8000 }),
      inFlightWaitMs: 5000,
      expected: { branch: 'wait', ms: 5000 },
    },
    { name: 'a wait never outlasts the owner’s lease', found: row({ leaseRemainingMs: 3000 }), inFlightWaitMs: 5000, expected: { branch: 'wait', ms: 3000 } },
    {
      name: 'a wait never outlasts Prefer: wait=N',
      found: row({ leaseRemainingMs: 8000 }),
      inFlightWaitMs: 5000,
      prefer: 'wait=2',
      expected: { branch: 'wait', ms: 2000 },
    },
    {
      name: 'a live lease with no wait left (already waited) is in flight (409)',
      found: row({ leaseRemainingMs: 8000 }),
      inFlightWaitMs: 0,
      expected: { branch: 'in-flight' },
    },
    {
      name: 'a live lease with Prefer: wait=0 is in flight at once',
      found: row({ leaseRemainingMs: 8000 }),
      prefer: 'wait=0',
      expected: { branch: 'in-flight' },
    },
    { name: 'a lease too short to wait for is in flight', found: row({ leaseRemainingMs: 5 }), expected: { branch: 'in-flight' } },
    { name: 'an expired lease is taken over', found: row({ leaseRemainingMs: -1 }), expected: { branch: 'take-over' } },
    { name: 'a released row (no lease) is taken over', found: row({ leaseRemainingMs: null, recoveryPoint: 'H1_DONE' }), expected: { branch: 'take-over' } },
    {
      name: 'a finished row without a response is not replayed (takeover refuses it, then 409)',
      found: row({ state: 'finished', response: null, leaseRemainingMs: null }),
      expected: { branch: 'take-over' },
    },
  ];
  for (const { name, found, requestHash = HASH, inFlightWaitMs = 5000, prefer = null, expected } of cases) {
    it(name, () => {
      expect(classify(found, { requestHash, inFlightWaitMs, prefer })).toEqual(expected);
    });
  }
});

describe('admitRequest', () => {
  const lease: Lease = { clientId: 'acme', key: 'k1', token: 't' };
  const request = { clientId: 'acme', key: 'k1', requestHash: HASH, identity: 'POST\n/v1/payments\n-\n{}', prefer: null, echo: { 'idempotency-key': 'k1' } };

  function policy(overrides: { takeOver?: Lease | null; cache?: AdmissionPolicy['cache'] } = {}) {
    const waits: number[] = [];
    const takeOvers: string[] = [];
    const value: AdmissionPolicy = {
      store: {
        takeOver: async (_clientId, key) => {
          takeOvers.push(key);
          return overrides.takeOver === undefined ? lease : overrides.takeOver;
        },
      },
      keys: { wait: async (_clientId, _key, ms) => void waits.push(ms), running: () => false },
      letGo: { before: () => undefined },
      cache: overrides.cache,
      leaseMs: 30_000,
      inFlightWaitMs: 5000,
      retryAfterMs: () => 7000,
    };
    return { value, waits, takeOvers };
  }

  /** `admitOnce` answering each of `results` in turn. */
  const sequence = (...results: AdmitResult[]) => {
    let calls = 0;
    const admitOnce = async () => results[Math.min(calls++, results.length - 1)]!;
    return { admitOnce, calls: () => calls };
  };

  it('runs a row it owns without looking further', async () => {
    const { value, takeOvers } = policy();
    const owned = { owned: true as const, lease, row: row() };
    const decided = await admitRequest(value, request, sequence(owned).admitOnce);
    expect(decided).toEqual({ kind: 'owned', admitted: owned });
    expect(takeOvers).toEqual([]);
  });

  it('answers 422 for another fingerprint, echoing the key', async () => {
    const decided = await admitRequest(policy().value, { ...request, requestHash: OTHER }, sequence({ owned: false, row: row() }).admitOnce);
    expect(decided.kind === 'answer' && decided.answer.status).toBe(422);
    expect(decided.kind === 'answer' && decided.answer.outcome).toBe('mismatch');
    expect(decided.kind === 'answer' && decided.answer.headers['idempotency-key']).toBe('k1');
  });

  it('replays a finished row and remembers it in the cache', async () => {
    const cache = createReplayCache();
    const finished = row({ state: 'finished', response: RESPONSE, leaseRemainingMs: null, expiresAt: Date.now() + 86_400_000 });
    const decided = await admitRequest(policy({ cache }).value, request, sequence({ owned: false, row: finished }).admitOnce);
    expect(decided.kind === 'answer' && decided.answer).toMatchObject({
      outcome: 'replayed',
      status: 201,
      body: RESPONSE.body,
      headers: { 'idempotency-replay': 'true', 'idempotency-key': 'k1' },
    });
    expect(cache.get('acme', 'k1', Date.now())?.request).toBe(request.identity);
  });

  it('waits once for a live lease, then decides again: a replay once the owner finished', async () => {
    const { value, waits } = policy();
    const admits = sequence({ owned: false, row: row() }, { owned: false, row: row({ state: 'finished', response: RESPONSE, leaseRemainingMs: null }) });
    const decided = await admitRequest(value, request, admits.admitOnce);
    expect(waits).toEqual([5000]);
    expect(admits.calls()).toBe(2);
    expect(decided.kind === 'answer' && decided.answer.outcome).toBe('replayed');
  });

  it('answers 409 with the front end’s Retry-After when the owner still holds the lease after the wait', async () => {
    const { value, waits } = policy();
    const decided = await admitRequest(value, request, sequence({ owned: false, row: row() }).admitOnce);
    expect(waits).toEqual([5000]);
    expect(decided.kind === 'answer' && decided.answer).toMatchObject({ outcome: 'in_flight', status: 409, headers: { 'retry-after': '7' } });
  });

  it('takes over a row whose lease expired', async () => {
    const { value, takeOvers } = policy();
    const expired = row({ leaseRemainingMs: -5 });
    const decided = await admitRequest(value, request, sequence({ owned: false, row: expired }).admitOnce);
    expect(takeOvers).toEqual(['k1']);
    expect(decided).toEqual({ kind: 'taken-over', lease, row: expired });
  });

  it('answers 409 when another taker won the takeover race', async () => {
    const decided = await admitRequest(policy({ takeOver: null }).value, request, sequence({ owned: false, row: row({ leaseRemainingMs: null }) }).admitOnce);
    expect(decided.kind === 'answer' && decided.answer).toMatchObject({ outcome: 'in_flight', status: 409, headers: { 'retry-after': '1' } });
  });

  it('passes on an answer the front end’s admission gave (its first step failed)', async () => {
    const refused = { outcome: 'transient' as const, status: 503, headers: {}, body: null };
    const decided = await admitRequest(policy().value, request, async () => refused);
    expect(decided).toEqual({ kind: 'answer', answer: refused });
  });
});

describe('fromCache', () => {
  it('replays a cached key with its prebuilt headers', () => {
    expect(fromCache(cached, HASH, { 'idempotency-key': 'k1' })).toMatchObject({ outcome: 'replayed', status: 201, headers: cached.replayHeaders });
  });

  it('answers 422 for another fingerprint, as the row would', () => {
    expect(fromCache(cached, OTHER, { 'idempotency-key': 'k1' })).toMatchObject({ outcome: 'mismatch', status: 422 });
  });

  it('builds the same replay headers a row replay sends', () => {
    const known = rememberFinished(undefined, row(), { requestHash: HASH, identity: '' }, RESPONSE);
    expect(known.replayHeaders).toEqual(cached.replayHeaders);
  });
});

/**
 * The Journal contract: every backend (memory, SQLite, IndexedDB) runs this one suite.
 *
 * `runJournalContract('sqlite', () => fixture)` registers a `describe` block. A fixture opens
 * handles on one fresh store; a persistent backend can open several handles on the same store
 * (a reopen after close, or two processes/tabs at once), which unlocks the durability and
 * sharing specifications.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OperationState, type Journal, type NewOperation, type OperationPatch, type StoredResult } from '../../src/journal/types.js';
import { rowEditCases, type RowEdit } from './journal-edits.contract.js';

/** One fresh, empty store per test. */
export interface JournalFixture {
  /** Opens a handle on this fixture's store; a second call opens a second handle on the same store. */
  open(): Journal;
  /** Removes whatever the fixture created (files, databases). */
  cleanup?(): Promise<void> | void;
  /** Changes a stored row outside oncely, as anyone who may write the store could (see `journal-edits.contract.ts`). */
  edit?(scope: string, key: string, change: RowEdit): Promise<void> | void;
}

export interface ContractOptions {
  /** Whether `open()` can be called again for the same store (reopen, two handles). */
  readonly persistent: boolean;
  /** Whether the fixture can change a row behind the journal's back (`edit`): a store others can write. */
  readonly editable?: boolean;
}

let counter = 0;
/** The scope of the fixture operations: the origin of their URL, as a client without a scope name has. */
export const SCOPE = 'http://127.0.0.1:8787';
/** A distinct operation each call, with a body carrying non-ASCII text. */
export function operation(overrides: Partial<NewOperation> = {}): NewOperation {
  counter += 1;
  return {
    scope: SCOPE,
    key: `0193b8a0-0000-7000-8000-${String(counter).padStart(12, '0')}`,
    method: 'POST',
    url: 'http://127.0.0.1:8787/v1/payments',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 1250 + counter, currency: 'EUR', reference: `inv-${counter} — Zürich 💶` }),
    fingerprint: `sha256:${counter}`,
    ...overrides,
  };
}

const result: StoredResult = {
  status: 201,
  headers: { 'content-type': 'application/json', 'idempotency-replayed': 'false' },
  body: '{"id":"pay_1","status":"succeeded"}',
  replayed: false,
};

/**
 * Moves the wall clock (`Date` only: timers and IndexedDB's scheduling stay real), so expiry and
 * retention are tested without sleeping — a loaded machine cannot make them flaky.
 */
const clock = {
  start(): void {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-12-01T09:00:00Z'));
  },
  advance(ms: number): void {
    vi.setSystemTime(Date.now() + ms);
  },
};

export function runJournalContract(name: string, makeFixture: () => JournalFixture, options: ContractOptions): void {
  describe(`Journal contract: ${name}`, () => {
    let fixture: JournalFixture;
    const opened: Journal[] = [];
    const open = (): Journal => {
      fixture ??= makeFixture();
      const journal = fixture.open();
      opened.push(journal);
      return journal;
    };

    afterEach(async () => {
      vi.useRealTimers();
      for (const journal of opened.splice(0)) await journal.close().catch(() => undefined);
      await fixture?.cleanup?.();
      fixture = undefined as unknown as JournalFixture;
    });

    it('stores a new operation as pending with no attempts and returns it as created', async () => {
      const journal = open();
      const op = operation({ createdAt: 1_700_000_000_000 });
      const { created, record } = await journal.put(op);
      expect(created).toBe(true);
      expect(record).toMatchObject({ ...op, state: OperationState.Pending, attempts: 0, lastStatus: null, result: null });
      expect(record.createdAt).toBe(1_700_000_000_000);
      expect(await journal.get(op.scope, op.key)).toEqual(record);
    });

    it('keeps the exact body text and headers, including a null body and non-ASCII characters', async () => {
      const journal = open();
      const withBody = operation({ headers: { 'content-type': 'application/json', 'x-trace': 'a b' } });
      const withoutBody = operation({ method: 'DELETE', body: null, headers: {} });
      await journal.put(withBody);
      await journal.put(withoutBody);
      expect((await journal.get(withBody.scope, withBody.key))?.body).toBe(withBody.body);
      expect((await journal.get(withBody.scope, withBody.key))?.headers).toEqual({ 'content-type': 'application/json', 'x-trace': 'a b' });
      expect((await journal.get(withoutBody.scope, withoutBody.key))?.body).toBeNull();
    });

    it('never overwrites an existing record when a key is put again', async () => {
      const journal = open();
      const first = operation();
      await journal.put(first);
      await journal.update(first.scope, first.key, { attempts: 2 });
      const again = await journal.put({ ...first, body: '{"amount":1}', fingerprint: 'sha256:other' });
      expect(again.created).toBe(false);
      expect(again.record.body).toBe(first.body);
      expect(again.record.attempts).toBe(2);
      expect((await journal.list()).length).toBe(1);
    });

    it('lets a corrected request replace one the server refused with 400 or 413, or one never sent; nothing else', async () => {
      const journal = open();
      const settle = async (patch: OperationPatch) => {
        const op = operation();
        await journal.put(op);
        await journal.update(op.scope, op.key, patch);
        const corrected = { ...op, body: '{"amount":2}', fingerprint: `sha256:${op.key}-corrected` };
        return { op, corrected, outcome: await journal.put(corrected) };
      };
      for (const status of [400, 413]) {
        const { corrected, outcome } = await settle({ state: OperationState.Failed, attempts: 1, lastStatus: status, result: null });
        expect(outcome.created).toBe(true);
        expect(outcome.record).toMatchObject({ state: OperationState.Pending, attempts: 0, lastStatus: null, result: null, body: corrected.body });
        expect(await journal.get(corrected.scope, corrected.key)).toEqual(outcome.record);
        expect(await journal.claim(corrected.scope, corrected.key, 'resumer', 60_000)).toBe(true); // resumable as any new record
      }
      const neverSent = await settle({ state: OperationState.Failed });
      expect(neverSent.outcome).toMatchObject({ created: true, record: { state: OperationState.Pending, body: neverSent.corrected.body } });
      // A key the server may have used is never given to another request.
      const kept: OperationPatch[] = [
        { state: OperationState.Failed, attempts: 1, lastStatus: 402 },
        { state: OperationState.Failed, attempts: 1, lastStatus: 422 },
        { state: OperationState.Failed, attempts: 3, lastStatus: null },
        { state: OperationState.Pending, attempts: 1, lastStatus: 400 },
        { state: OperationState.Succeeded, attempts: 1, lastStatus: 201 },
      ];
      for (const patch of kept) {
        const { op, outcome } = await settle(patch);
        expect(outcome.created, JSON.stringify(patch)).toBe(false);
        expect(outcome.record).toMatchObject({ body: op.body, fingerprint: op.fingerprint, ...patch });
      }
      // The same request again is the same operation: its refusal stands.
      const same = operation();
      await journal.put(same);
      await journal.update(same.scope, same.key, { state: OperationState.Failed, attempts: 1, lastStatus: 400 });
      expect(await journal.put(same)).toMatchObject({ created: false, record: { state: OperationState.Failed, lastStatus: 400 } });
      const [many] = await journal.putMany([{ ...same, body: '{"amount":3}', fingerprint: 'sha256:many' }]);
      expect(many).toMatchObject({ created: true, record: { state: OperationState.Pending, body: '{"amount":3}' } });
    });

    it('puts many operations at once, in order, reporting existing and repeated keys as not created', async () => {
      const journal = open();
      const existing = operation();
      await journal.put(existing);
      const fresh = [operation(), operation(), operation()];
      const outcomes = await journal.putMany([fresh[0]!, existing, fresh[1]!, fresh[0]!, fresh[2]!]);
      expect(outcomes.map((o) => o.created)).toEqual([true, false, true, false, true]);
      expect(outcomes.map((o) => o.record.key)).toEqual([fresh[0]!.key, existing.key, fresh[1]!.key, fresh[0]!.key, fresh[2]!.key]);
      expect((await journal.list()).map((r) => r.key)).toEqual([existing.key, ...fresh.map((o) => o.key)]);
      expect(await journal.putMany([])).toEqual([]);
    });

    it('stores an operation as prepared (submittedAt null), or as submitted at the time of the put', async () => {
      clock.start();
      const journal = open();
      const prepared = operation();
      const submitted = operation({ submitted: true, createdAt: 1_700_000_000_000 });
      expect((await journal.put(prepared)).record.submittedAt).toBeNull();
      expect((await journal.put(submitted)).record.submittedAt).toBe(Date.now());
      expect((await journal.get(prepared.scope, prepared.key))?.submittedAt).toBeNull();
      expect((await journal.get(submitted.scope, submitted.key))?.submittedAt).toBe(Date.now());
      const many = await journal.putMany([operation({ submitted: true }), operation({ submitted: false }), operation()]);
      expect(many.map((o) => o.record.submittedAt)).toEqual([Date.now(), null, null]);
      expect((await journal.list()).map((r) => r.submittedAt)).toEqual([Date.now(), null, Date.now(), null, null]);
    });

    it('marks a prepared operation submitted by update alone: putting it again, even as submitted, changes nothing', async () => {
      clock.start();
      const journal = open();
      const op = operation();
      await journal.put(op);
      const again = await journal.put({ ...op, submitted: true });
      expect(again).toMatchObject({ created: false, record: { submittedAt: null } });
      clock.advance(1_000);
      const marked = await journal.update(op.scope, op.key, { submittedAt: Date.now() });
      expect(marked).toMatchObject({ state: OperationState.Pending, submittedAt: Date.now(), attempts: 0, body: op.body });
      const later = await journal.update(op.scope, op.key, { attempts: 1, lastStatus: 503 });
      expect(later?.submittedAt).toBe(Date.now());
      expect(await journal.get(op.scope, op.key)).toEqual(later);
    });

    it('returns undefined for an unknown key, from get and from update', async () => {
      const journal = open();
      const op = operation();
      await journal.put(op);
      expect(await journal.get(SCOPE, '0193b8a0-0000-7000-8000-ffffffffffff')).toBeUndefined();
      expect(await journal.update(SCOPE, '0193b8a0-0000-7000-8000-ffffffffffff', { attempts: 1 })).toBeUndefined();
      // A known key in another scope is another, unknown, operation.
      expect(await journal.get('http://127.0.0.1:9999', op.key)).toBeUndefined();
      expect(await journal.update('http://127.0.0.1:9999', op.key, { attempts: 1 })).toBeUndefined();
      expect((await journal.get(op.scope, op.key))?.attempts).toBe(0);
    });

    it('applies a patch field by field, setting null explicitly and leaving absent fields alone', async () => {
      const journal = open();
      const op = operation();
      const { record: before } = await journal.put(op);
      const afterAttempt = await journal.update(op.scope, op.key, { attempts: 1, lastStatus: 503 });
      expect(afterAttempt).toMatchObject({ state: OperationState.Pending, attempts: 1, lastStatus: 503, result: null, body: op.body });
      expect(afterAttempt!.updatedAt).toBeGreaterThanOrEqual(before.updatedAt);
      const cleared = await journal.update(op.scope, op.key, { lastStatus: null });
      expect(cleared).toMatchObject({ attempts: 1, lastStatus: null });
      const settled = await journal.update(op.scope, op.key, { state: OperationState.Succeeded, attempts: 2, lastStatus: 201, result });
      expect(settled).toMatchObject({ state: OperationState.Succeeded, attempts: 2, lastStatus: 201, result });
      expect(await journal.get(op.scope, op.key)).toEqual(settled);
      expect(settled!.createdAt).toBe(before.createdAt);
    });

    it('lists oldest first, in insertion order for equal times, filtered by state and limited', async () => {
      const journal = open();
      const late = operation({ createdAt: 3000 });
      const early = operation({ createdAt: 1000 });
      const tieA = operation({ createdAt: 2000 });
      const tieB = operation({ createdAt: 2000 });
      for (const op of [late, early, tieA, tieB]) await journal.put(op);
      await journal.update(tieA.scope, tieA.key, { state: OperationState.Failed, lastStatus: 422 });
      expect((await journal.list()).map((r) => r.key)).toEqual([early.key, tieA.key, tieB.key, late.key]);
      expect((await journal.list({ state: OperationState.Pending })).map((r) => r.key)).toEqual([early.key, tieB.key, late.key]);
      expect((await journal.list({ state: OperationState.Failed })).map((r) => r.key)).toEqual([tieA.key]);
      expect((await journal.list({ state: OperationState.Pending, limit: 2 })).map((r) => r.key)).toEqual([early.key, tieB.key]);
      expect(await journal.list({ state: OperationState.Succeeded })).toEqual([]);
    });

    it('keeps operations of different scopes apart, even under the same key: put, get, update, claim and list are per scope', async () => {
      const journal = open();
      const mine = operation();
      const named = { ...mine, scope: `${SCOPE}#payroll`, body: '{"amount":2}', fingerprint: 'sha256:named' };
      const elsewhere = { ...mine, scope: 'http://127.0.0.1:9999', url: 'http://127.0.0.1:9999/v1/payments', body: '{"amount":3}' };
      expect((await journal.put(mine)).created).toBe(true);
      expect((await journal.putMany([named, elsewhere])).map((o) => o.created)).toEqual([true, true]);
      expect((await journal.get(named.scope, named.key))?.body).toBe(named.body);
      expect((await journal.get(mine.scope, mine.key))?.body).toBe(mine.body);
      await journal.update(named.scope, named.key, { state: OperationState.Succeeded, lastStatus: 201, result });
      expect((await journal.get(mine.scope, mine.key))?.state).toBe(OperationState.Pending);
      expect(await journal.claim(mine.scope, mine.key, 'process-a', 60_000)).toBe(true);
      expect(await journal.claim(elsewhere.scope, elsewhere.key, 'process-b', 60_000)).toBe(true);
      expect(await journal.claim(named.scope, named.key, 'process-b', 60_000)).toBe(false);
      expect((await journal.list({ scope: mine.scope })).map((r) => [r.scope, r.key, r.body])).toEqual([[mine.scope, mine.key, mine.body]]);
      expect((await journal.list({ scope: named.scope, state: OperationState.Pending })).length).toBe(0);
      expect((await journal.list()).map((r) => r.scope)).toEqual([mine.scope, named.scope, elsewhere.scope]);
      expect(await journal.damaged()).toEqual([]);
      expect(await journal.damaged({ scope: mine.scope })).toEqual([]);
    });

    it('lets one owner claim a pending operation and refuses others until the claim is released', async () => {
      const journal = open();
      const op = operation();
      await journal.put(op);
      expect(await journal.claim(op.scope, op.key, 'process-a', 60_000)).toBe(true);
      expect(await journal.claim(op.scope, op.key, 'process-b', 60_000)).toBe(false);
      expect(await journal.claim(op.scope, op.key, 'process-a', 60_000)).toBe(true);
      await journal.release(op.scope, op.key, 'process-b');
      expect(await journal.claim(op.scope, op.key, 'process-b', 60_000)).toBe(false);
      await journal.release(op.scope, op.key, 'process-a');
      expect(await journal.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
    });

    it('hands a claim to another owner once it has run out', async () => {
      clock.start();
      const journal = open();
      const op = operation();
      await journal.put(op);
      expect(await journal.claim(op.scope, op.key, 'crashed', 30_000)).toBe(true);
      clock.advance(29_999);
      expect(await journal.claim(op.scope, op.key, 'survivor', 60_000)).toBe(false);
      clock.advance(1);
      expect(await journal.claim(op.scope, op.key, 'survivor', 60_000)).toBe(true);
      expect(await journal.claim(op.scope, op.key, 'crashed', 60_000)).toBe(false);
    });

    it('never claims an unknown or settled operation', async () => {
      const journal = open();
      const op = operation();
      await journal.put(op);
      expect(await journal.claim(SCOPE, '0193b8a0-0000-7000-8000-ffffffffffff', 'a', 60_000)).toBe(false);
      expect(await journal.claim(`${SCOPE}#other`, op.key, 'a', 60_000)).toBe(false);
      expect(await journal.claim(op.scope, op.key, 'a', 60_000)).toBe(true);
      await journal.update(op.scope, op.key, { state: OperationState.Succeeded, lastStatus: 201, result });
      expect(await journal.claim(op.scope, op.key, 'a', 60_000)).toBe(false);
      expect(await journal.claim(op.scope, op.key, 'b', 60_000)).toBe(false);
    });

    // post() journals its operation claimed (NewOperation.claim): no other process may send it
    // before its first attempt, so a request refused before it leaves can be settled failed.
    describe('put() with a claim', () => {
      // Two handles on one store where the backend has them (two processes, two tabs), else one.
      const pair = (): [Journal, Journal] => {
        const mine = open();
        return [mine, options.persistent ? open() : mine];
      };

      it('creates the record held by the owner it names: another owner is refused until it is released', async () => {
        const [mine, other] = pair();
        const op = operation();
        const outcome = await mine.put({ ...op, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } });
        expect(outcome).toMatchObject({ created: true, claimed: true });
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(false);
        expect(await mine.claim(op.scope, op.key, 'process-a', 60_000)).toBe(true);
        await mine.release(op.scope, op.key, 'process-a');
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
      });

      it('never lets a claim made while the record is being created win over the creating owner', async () => {
        const [mine, other] = pair();
        const ops = Array.from({ length: 20 }, () => operation());
        const raced = await Promise.all(
          ops.map(async (op) => {
            const [outcome, stolen] = await Promise.all([
              mine.put({ ...op, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } }),
              other.claim(op.scope, op.key, 'process-b', 60_000),
            ]);
            return { claimed: outcome.claimed, stolen };
          }),
        );
        expect(raced.filter((r) => r.claimed !== true || r.stolen)).toEqual([]);
      });

      it('claims nothing when the key exists already: the record and its holder stay as they were', async () => {
        const [mine, other] = pair();
        const op = operation();
        await other.put({ ...op, submitted: true });
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
        const outcome = await mine.put({ ...op, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } });
        expect(outcome.created).toBe(false);
        expect(outcome.claimed).toBeUndefined();
        expect(await mine.claim(op.scope, op.key, 'process-a', 60_000)).toBe(false);
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
      });

      it('holds the claim on a corrected request that replaces a refused one', async () => {
        const [mine, other] = pair();
        const op = operation();
        await mine.put(op);
        await mine.update(op.scope, op.key, { state: OperationState.Failed, attempts: 1, lastStatus: 400, result: null });
        const corrected = { ...op, body: '{"amount":3}', fingerprint: `sha256:${op.key}-fixed`, submitted: true, claim: { owner: 'process-a', ttlMs: 60_000 } };
        expect(await mine.put(corrected)).toMatchObject({ created: true, claimed: true });
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(false);
      });

      it('stores an unclaimed record when no claim is asked for', async () => {
        const [mine, other] = pair();
        const op = operation();
        expect((await mine.put(op)).claimed).toBeUndefined();
        expect(await other.claim(op.scope, op.key, 'process-b', 60_000)).toBe(true);
      });
    });

    it('prunes only settled records older than the retention and reports how many', async () => {
      clock.start();
      const journal = open();
      const [oldDone, oldFailed, oldPending, freshDone] = [operation(), operation(), operation(), operation()];
      await journal.putMany([oldDone!, oldFailed!, oldPending!, freshDone!]);
      await journal.update(oldDone!.scope, oldDone!.key, { state: OperationState.Succeeded, result });
      await journal.update(oldFailed!.scope, oldFailed!.key, { state: OperationState.Failed, lastStatus: 422 });
      clock.advance(10_000);
      await journal.update(freshDone!.scope, freshDone!.key, { state: OperationState.Succeeded, result });
      clock.advance(5_000);
      expect(await journal.prune(10_000)).toBe(2);
      expect((await journal.list()).map((r) => r.key).sort()).toEqual([oldPending!.key, freshDone!.key].sort());
      expect(await journal.prune(60_000)).toBe(0);
    });

    it('rejects every call after close', async () => {
      const journal = open();
      const op = operation();
      await journal.put(op);
      await journal.close();
      await expect(journal.get(op.scope, op.key)).rejects.toThrow();
      await expect(journal.put(operation())).rejects.toThrow();
      await expect(journal.list()).rejects.toThrow();
      await expect(journal.damaged()).rejects.toThrow();
    });

    if (options.editable) {
      describe('a row changed outside oncely', () => {
        rowEditCases(() => ({
          open,
          operation,
          edit: (scope, key, change) => {
            if (fixture?.edit === undefined) throw new Error('this fixture cannot edit its rows');
            return fixture.edit(scope, key, change);
          },
        }));
      });
    }

    if (options.persistent) {
      it('keeps every record, byte for byte, across close and reopen', async () => {
        const first = open();
        const ops = [operation({ submitted: true }), operation({ body: null, method: 'DELETE' }), operation({ submitted: true })];
        await first.putMany(ops);
        await first.update(ops[2]!.scope, ops[2]!.key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result });
        const before = await first.list();
        await first.close();
        const second = open();
        expect(await second.list()).toEqual(before);
        expect((await second.get(ops[0]!.scope, ops[0]!.key))?.body).toBe(ops[0]!.body);
        expect((await second.list()).map((r) => r.submittedAt === null)).toEqual([false, true, false]);
      });

      it('shares one store between two handles: a put by one is seen by the other and never overwritten', async () => {
        const a = open();
        const b = open();
        const op = operation();
        expect((await a.put(op)).created).toBe(true);
        expect((await b.put({ ...op, body: '{}' })).created).toBe(false);
        expect((await b.get(op.scope, op.key))?.body).toBe(op.body);
      });

      it('gives each operation to exactly one of two handles claiming concurrently', async () => {
        const a = open();
        const b = open();
        const ops = Array.from({ length: 30 }, () => operation());
        await a.putMany(ops);
        const wins = await Promise.all(
          ops.flatMap((op) => [
            a.claim(op.scope, op.key, 'tab-a', 60_000).then((ok) => (ok ? 'a' : '')),
            b.claim(op.scope, op.key, 'tab-b', 60_000).then((ok) => (ok ? 'b' : '')),
          ]),
        );
        const perOp = ops.map((_, i) => wins[2 * i]! + wins[2 * i + 1]!);
        expect(perOp.every((winner) => winner === 'a' || winner === 'b')).toBe(true);
      });

      it("lets a second handle take over an operation once the first handle's claim runs out", async () => {
        // Real time: with Web Locks only the holder's own timer can give a lock back.
        const a = open();
        const b = open();
        const [held, lapsing] = [operation(), operation()];
        await a.putMany([held, lapsing]);
        expect(await a.claim(held.scope, held.key, 'tab-a', 60_000)).toBe(true);
        expect(await b.claim(held.scope, held.key, 'tab-b', 60_000)).toBe(false);
        expect(await a.claim(lapsing.scope, lapsing.key, 'tab-a', 50)).toBe(true);
        let takenOver = false;
        for (let tries = 0; tries < 250 && !takenOver; tries += 1) {
          takenOver = await b.claim(lapsing.scope, lapsing.key, 'tab-b', 60_000);
          if (!takenOver) await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(takenOver).toBe(true);
        expect(await b.claim(held.scope, held.key, 'tab-b', 60_000)).toBe(false);
      });
    }
  });
}

/**
 * Part of the Journal contract for backends whose rows can be changed outside oncely (SQLite,
 * IndexedDB): a row whose key, scope, state, outcome or timestamps were changed behind the
 * journal's back is damaged. Every read reports it (`damaged()`), none hands it out as a record
 * (`get` rejects, `list` leaves it out), and no write of oncely's turns it back into one that reads
 * as intact (`update`, `put`, `prune`). The memory journal's records are objects no one else can
 * reach: its fixture has no `edit`, so `runJournalContract` does not register these cases for it.
 */
import { expect, it } from 'vitest';
import { OperationState, type Journal, type NewOperation } from '../../src/journal/types.js';

/** The fields of a row an edit outside oncely may set, named as the record names them. */
export interface RowEdit {
  readonly scope?: string;
  readonly key?: string;
  readonly state?: string;
  readonly submittedAt?: number | null;
  readonly createdAt?: number;
  readonly updatedAt?: number;
  readonly lastStatus?: number | null;
}

/** What the cases need from the contract: a handle on the fixture's store, and a way to edit it from outside. */
export interface EditHarness {
  open(): Journal;
  edit(scope: string, key: string, change: RowEdit): Promise<void> | void;
  operation(overrides?: Partial<NewOperation>): NewOperation;
}

const SEALED = /changed outside oncely/;

const declined = { status: 402, headers: { 'content-type': 'application/problem+json' }, body: '{"title":"card declined"}', replayed: false };
const paid = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}', replayed: false };

/** The row `(scope, key)` is reported damaged by every read, and an update leaves it so. */
async function expectDamaged(journal: Journal, scope: string, key: string): Promise<void> {
  const reported = { scope, key, reason: expect.stringMatching(SEALED) as unknown };
  expect(await journal.damaged()).toContainEqual(reported);
  expect(await journal.damaged({ scope })).toContainEqual(reported);
  expect((await journal.list()).map((record) => [record.scope, record.key])).not.toContainEqual([scope, key]);
  await expect(journal.get(scope, key)).rejects.toMatchObject({ code: 'JOURNAL_ERROR', damaged: reported });
  const updated = await journal.update(scope, key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result: paid }).catch(() => undefined);
  expect(updated).toBeUndefined();
  expect(await journal.damaged({ scope })).toContainEqual(reported);
}

/** A neighbouring row still reads, updates and claims as usual. */
async function expectHealthy(journal: Journal, op: NewOperation): Promise<void> {
  expect((await journal.update(op.scope, op.key, { attempts: 1, lastStatus: 503 }))?.attempts).toBe(1);
  expect((await journal.get(op.scope, op.key))?.lastStatus).toBe(503);
  expect(await journal.claim(op.scope, op.key, 'neighbour', 60_000)).toBe(true);
}

/** Registers the cases in the calling `describe`; `harness()` is called inside each test. */
export function rowEditCases(harness: () => EditHarness): void {
  it('reports a pending row whose key was changed as damaged under its new key; the old key is simply absent', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [victim, neighbour] = [operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([victim, neighbour]);
    const renamed = `${victim.key}-renamed`;
    await edit(victim.scope, victim.key, { key: renamed });
    await expectDamaged(journal, victim.scope, renamed);
    expect(await journal.get(victim.scope, victim.key)).toBeUndefined();
    expect((await journal.list({ state: OperationState.Pending })).map((record) => record.key)).toEqual([neighbour.key]);
    await expectHealthy(journal, neighbour);
  });

  it('reports both rows of a key swap as damaged', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [a, b, neighbour] = [operation({ submitted: true }), operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([a, b, neighbour]);
    await edit(a.scope, a.key, { key: 'swapping' });
    await edit(b.scope, b.key, { key: a.key });
    await edit(a.scope, 'swapping', { key: b.key });
    await expectDamaged(journal, a.scope, a.key);
    await expectDamaged(journal, b.scope, b.key);
    expect((await journal.list()).map((record) => record.key)).toEqual([neighbour.key]);
    await expectHealthy(journal, neighbour);
  });

  it('reports a succeeded row and a declined (402) row set back to pending as damaged: neither is listed as pending', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [succeeded, failed, neighbour] = [operation({ submitted: true }), operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([succeeded, failed, neighbour]);
    await journal.update(succeeded.scope, succeeded.key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result: paid });
    await journal.update(failed.scope, failed.key, { state: OperationState.Failed, attempts: 1, lastStatus: 402, result: declined });
    await edit(succeeded.scope, succeeded.key, { state: OperationState.Pending });
    await edit(failed.scope, failed.key, { state: OperationState.Pending });
    await expectDamaged(journal, succeeded.scope, succeeded.key);
    await expectDamaged(journal, failed.scope, failed.key);
    expect((await journal.list({ state: OperationState.Pending })).map((record) => record.key)).toEqual([neighbour.key]);
    await expectHealthy(journal, neighbour);
  });

  it('reports a prepared row given a submittedAt as damaged', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [prepared, neighbour] = [operation(), operation()];
    await journal.putMany([prepared, neighbour]);
    await edit(prepared.scope, prepared.key, { submittedAt: Date.now() });
    await expectDamaged(journal, prepared.scope, prepared.key);
    await expectHealthy(journal, neighbour);
  });

  it('reports a row moved to another scope name of the same origin as damaged in that scope, and gone from its own', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [moved, neighbour] = [operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([moved, neighbour]);
    const payroll = `${moved.scope}#payroll`;
    await edit(moved.scope, moved.key, { scope: payroll });
    await expectDamaged(journal, payroll, moved.key);
    expect(await journal.list({ scope: payroll })).toEqual([]);
    expect(await journal.get(moved.scope, moved.key)).toBeUndefined();
    await expectHealthy(journal, neighbour);
  });

  it('never gives the key of a declined row whose lastStatus was set to 400 to another request', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [refused, neighbour] = [operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([refused, neighbour]);
    await journal.update(refused.scope, refused.key, { state: OperationState.Failed, attempts: 1, lastStatus: 402, result: declined });
    await edit(refused.scope, refused.key, { lastStatus: 400 });
    const other = { ...refused, body: '{"amount":999999}', fingerprint: 'sha256:another-request' };
    await expect(journal.put(other)).rejects.toMatchObject({ code: 'JOURNAL_ERROR', damaged: { key: refused.key } });
    await expect(journal.putMany([other])).rejects.toMatchObject({ code: 'JOURNAL_ERROR', damaged: { key: refused.key } });
    await expectDamaged(journal, refused.scope, refused.key);
    await expectHealthy(journal, neighbour);
  });

  it('reports a row whose createdAt was changed as damaged', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [aged, neighbour] = [operation({ submitted: true, createdAt: Date.now() - 3 * 86_400_000 }), operation({ submitted: true })];
    await journal.putMany([aged, neighbour]);
    await edit(aged.scope, aged.key, { createdAt: Date.now() });
    await expectDamaged(journal, aged.scope, aged.key);
    await expectHealthy(journal, neighbour);
  });

  it('never prunes a settled row whose updatedAt was moved back; it is reported damaged', async () => {
    const { open, edit, operation } = harness();
    const journal = open();
    const [settled, neighbour] = [operation({ submitted: true }), operation({ submitted: true })];
    await journal.putMany([settled, neighbour]);
    await journal.update(settled.scope, settled.key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result: paid });
    await edit(settled.scope, settled.key, { updatedAt: 0 });
    expect(await journal.prune(60_000)).toBe(0);
    await expectDamaged(journal, settled.scope, settled.key);
    await expectHealthy(journal, neighbour);
  });
}

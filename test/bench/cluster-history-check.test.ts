/**
 * The cluster run's history checker (`bench/cluster/history-check.ts`) on synthetic histories:
 * a clean one passes, and each property it promises is flagged when a history breaks it — a
 * checker that cannot fail would make every cluster run look clean.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, type Attempt, type History, type JournalEntry, type ServerRecord } from '../../bench/cluster/history-check.js';

const op = (key: string) => ({ key, app: 'serve' });
const ack = (key: string, digest: string, target = 'serve-0', status = 201): Attempt => ({ key, target, startedAt: 0, endedAt: 1, status, digest });
const finished = (key: string, digest: string, effects = 1, ledger = 1): ServerRecord => ({ key, record: 'finished', status: 201, digest, effects, ledger });
const journal = (key: string, digest: string, state = 'succeeded'): JournalEntry => ({ key, journal: 'serve-0', state, status: 201, digest });

/** Two acknowledged keys, one never answered and absent, one never answered and complete. */
function clean(): History {
  return {
    operations: [op('a'), op('b'), op('c'), op('d')],
    attempts: [
      ack('a', 'A'),
      ack('b', 'B'),
      { key: 'b', target: 'serve-1', startedAt: 0, endedAt: 1, error: 'ECONNRESET' },
      ack('b', 'B', 'serve-1'),
      { key: 'c', target: 'serve-0', startedAt: 0, endedAt: 1, status: 503, digest: 'x' },
      { key: 'd', target: 'serve-0', startedAt: 0, endedAt: 1, error: 'timeout' },
    ],
    server: [finished('a', 'A'), finished('b', 'B'), finished('d', 'D')],
    journals: [journal('a', 'A'), journal('b', 'B'), journal('c', '', 'pending'), journal('d', 'D')],
  };
}

const with_ = (patch: Partial<History>): History => ({ ...clean(), ...patch });
const properties = (history: History) => checkHistory(history).violations.map((v) => `${v.property}:${v.key}`);

describe('checkHistory', () => {
  it('passes a history where every acknowledged key exists once with the answer its clients got', () => {
    const verdict = checkHistory(clean());
    expect(verdict).toMatchObject({ operations: 4, acknowledged: 2, unacknowledged: { absent: 1, complete: 1 }, unsettled: 1, violations: [] });
  });

  it('flags an acknowledged key the server does not hold as lost', () => {
    expect(properties(with_({ server: [finished('b', 'B'), finished('d', 'D')], journals: [] }))).toEqual(['lost:a']);
  });

  it('flags an acknowledged key whose record finished without its payment as lost', () => {
    expect(properties(with_({ server: [finished('a', 'A', 0, 0), finished('b', 'B'), finished('d', 'D')] }))).toContain('lost:a');
  });

  it('flags two payment rows or two ledger entries for one key as duplicated', () => {
    expect(properties(with_({ server: [finished('a', 'A', 2, 1), finished('b', 'B', 1, 2), finished('d', 'D')] }))).toEqual(['duplicated:a', 'duplicated:b']);
  });

  it('flags a key its clients were told two different 2xx bodies for as duplicated', () => {
    const attempts = [...clean().attempts, ack('a', 'A2', 'serve-1')];
    expect(properties(with_({ attempts }))).toEqual(['duplicated:a', 'wrongAnswers:a']);
  });

  it('flags an acknowledged key whose stored response none of its clients got as lost', () => {
    expect(properties(with_({ server: [finished('a', 'other'), finished('b', 'B'), finished('d', 'D')], journals: [] }))).toEqual(['lost:a']);
  });

  it('flags a client told another response than the one the server holds and another client got as a wrong answer', () => {
    const attempts = [...clean().attempts, ack('b', 'B2', 'serve-1')];
    expect(properties(with_({ attempts }))).toEqual(['duplicated:b', 'wrongAnswers:b']);
  });

  it('flags a lost key that the late retry ran again as lost and duplicated, and does not count the late answer as an acknowledgement', () => {
    const attempts = [...clean().attempts, { ...ack('a', 'A2', 'serve-1-late'), late: true }, { ...ack('c', 'C', 'serve-1-late'), late: true }];
    const server = [finished('a', 'A2'), finished('b', 'B'), finished('c', 'C'), finished('d', 'D')];
    const verdict = checkHistory(with_({ attempts, server, journals: [] }));
    expect(verdict.violations.map((v) => `${v.property}:${v.key}`)).toEqual(['duplicated:a', 'lost:a']);
    expect(verdict.acknowledged).toBe(2);
  });

  it('flags a record still started, and effects without a record, as half done', () => {
    const server: ServerRecord[] = [
      finished('a', 'A'),
      finished('b', 'B'),
      { key: 'c', record: 'started', effects: 1, ledger: 0 },
      { key: 'd', record: 'absent', effects: 1, ledger: 0 },
    ];
    expect(properties(with_({ server, journals: [] }))).toEqual(['halfDone:c', 'halfDone:d']);
  });

  it('flags a finished 2xx record without its ledger entry as half done', () => {
    expect(properties(with_({ server: [finished('a', 'A'), finished('b', 'B'), finished('d', 'D', 1, 0)] }))).toEqual(['halfDone:d']);
  });

  it('flags a journal settled with a response the server does not hold', () => {
    const journals = [journal('a', 'A'), journal('b', 'other'), journal('c', 'C')];
    expect(properties(with_({ journals }))).toEqual(['journalDisagrees:b', 'journalDisagrees:c']);
  });

  it('counts each broken key once per property, however many clients saw it', () => {
    const attempts = [ack('a', 'A'), ack('a', 'A', 'serve-1'), ack('a', 'A', 'serve-0')];
    const verdict = checkHistory(with_({ attempts, server: [finished('b', 'B'), finished('d', 'D')], journals: [] }));
    expect(verdict).toMatchObject({ acknowledged: 1, lost: 1, duplicated: 0, wrongAnswers: 0, halfDone: 0 });
  });
});

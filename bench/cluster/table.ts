/**
 * The matrix's table: one Markdown row per trial.
 *
 * @module
 */
import type { TrialResult } from './trial.js';

export const TABLE_HEADER = [
  '| replication | DCS | fault | trial | operations | acknowledged | lost | duplicated | wrong answers | half done | journals disagree | never acknowledged (absent / complete) | unsettled | no leader | two leaders | longest gap without a 2xx | 5xx / no answer | startup check of oncely serve |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
].join('\n');

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const bold = (n: number): string => (n === 0 ? '**0**' : `**${n}** ⚠`);

/** What `oncely serve` must log at startup: the warning on an asynchronous cluster, `synchronous` otherwise. */
export function startupCheckHolds(r: TrialResult): boolean {
  const expected = r.spec.replication === 'async' ? 'asynchronous' : 'synchronous';
  return r.replicationAtStart.length > 0 && r.replicationAtStart.every((state) => state === expected);
}

/** One trial as a Markdown row. */
export function formatRow(r: TrialResult): string {
  const v = r.verdict;
  return `| ${r.spec.replication} | ${r.spec.dcs} | ${r.spec.fault} | ${r.spec.trial} | ${v.operations} | ${v.acknowledged} | ${bold(v.lost)} | ${bold(v.duplicated)} | ${bold(v.wrongAnswers)} | ${bold(v.halfDone)} | ${bold(v.journalDisagrees)} | ${v.unacknowledged.absent} / ${v.unacknowledged.complete} | ${v.unsettled} | ${s(r.noLeaderMs)} | ${s(r.twoLeadersMs)} | ${s(r.longestGapMs)} | ${r.status5xx} / ${r.noAnswer} | ${[...new Set(r.replicationAtStart)].join(', ')} |`;
}

const range = (values: readonly number[]): string => {
  const [low, high] = [Math.min(...values), Math.max(...values)];
  return s(low) === s(high) ? s(low) : `${(low / 1000).toFixed(1)}–${s(high)}`;
};

/** One row per replication mode and fault, its trials summed (counts) or spanned (times). */
export function formatSummary(results: readonly TrialResult[]): string {
  const groups = new Map<string, TrialResult[]>();
  for (const r of results)
    groups.set(`${r.spec.replication} ${r.spec.dcs} ${r.spec.fault}`, [...(groups.get(`${r.spec.replication} ${r.spec.dcs} ${r.spec.fault}`) ?? []), r]);
  const rows = [...groups.values()].map((group) => {
    const sum = (pick: (r: TrialResult) => number): number => group.reduce((total, r) => total + pick(r), 0);
    const { replication, dcs, fault } = group[0]!.spec;
    return `| ${replication} | ${dcs} | ${fault} | ${group.length} | ${sum((r) => r.verdict.acknowledged)} | ${bold(sum((r) => r.verdict.lost))} | ${bold(sum((r) => r.verdict.duplicated))} | ${bold(sum((r) => r.verdict.wrongAnswers))} | ${bold(sum((r) => r.verdict.halfDone))} | ${bold(sum((r) => r.verdict.journalDisagrees))} | ${range(group.map((r) => r.noLeaderMs))} | ${range(group.map((r) => r.twoLeadersMs))} | ${range(group.map((r) => r.longestGapMs))} |`;
  });
  return [
    '| replication | DCS | fault | trials | acknowledged | lost | duplicated | wrong answers | half done | journals disagree | no leader | two leaders | longest gap without a 2xx |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

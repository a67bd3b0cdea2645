/**
 * The matrix's table: one Markdown row per trial.
 *
 * @module
 */
import type { TrialResult } from './trial.js';

export const TABLE_HEADER = [
  '| replication | fault | trial | operations | acknowledged | lost | duplicated | wrong answers | half done | journals disagree | never acknowledged (absent / complete) | unsettled | no leader | two leaders | longest gap without a 2xx | 5xx / no answer | startup check of oncely serve |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
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
  return `| ${r.spec.replication} | ${r.spec.fault} | ${r.spec.trial} | ${v.operations} | ${v.acknowledged} | ${bold(v.lost)} | ${bold(v.duplicated)} | ${bold(v.wrongAnswers)} | ${bold(v.halfDone)} | ${bold(v.journalDisagrees)} | ${v.unacknowledged.absent} / ${v.unacknowledged.complete} | ${v.unsettled} | ${s(r.noLeaderMs)} | ${s(r.twoLeadersMs)} | ${s(r.longestGapMs)} | ${r.status5xx} / ${r.noAnswer} | ${[...new Set(r.replicationAtStart)].join(', ')} |`;
}

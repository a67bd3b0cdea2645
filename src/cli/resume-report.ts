/**
 * What `oncely resume` prints about the operations it resumed.
 *
 * @module
 * @internal
 */
import type { ResumeOutcome } from '../client/results.js';

/**
 * Prints what `resume()` did to each operation (a table, or JSON); returns how many are still
 * unsettled.
 *
 * @example
 * ```ts
 * const unsettled = printResumed(await client.resume(), false);
 * ```
 * @internal
 */
export function printResumed(outcomes: readonly ResumeOutcome[], json: boolean): number {
  const lines = outcomes.map((outcome) => {
    switch (outcome.state) {
      case 'succeeded':
        return { key: outcome.key, state: outcome.state, status: outcome.result.status, replayed: outcome.result.replayed };
      case 'skipped':
        return { key: outcome.key, state: outcome.state, detail: 'another live process holds its claim' };
      case 'damaged':
        return { key: outcome.key, state: outcome.state, detail: `damaged row, left as it is: ${outcome.reason}` };
      default:
        return { key: outcome.key, state: outcome.state, detail: outcome.error.message };
    }
  });
  const unsettled = lines.filter((line) => line.state !== 'succeeded' && line.state !== 'failed').length;
  if (json) {
    console.log(JSON.stringify(lines, null, 2));
    return unsettled;
  }
  for (const line of lines) {
    const what = 'status' in line ? `${line.status}${line.replayed ? ' (replayed)' : ''}` : line.detail;
    console.log(`${line.key}  ${line.state.padEnd(9)}  ${what}`);
  }
  console.log(`\nresumed ${lines.length}: ${lines.length - unsettled} settled, ${unsettled} still without a final outcome`);
  return unsettled;
}

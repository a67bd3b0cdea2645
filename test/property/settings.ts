/**
 * fast-check's settings for every property of the suite, in one place: a fixed seed, so that CI
 * runs the same cases every time and a failure can be replayed, and a bounded number of runs per
 * property, so that the whole property suite stays within about a minute of `npm test`.
 *
 * - `ONCELY_FC_SEED=<integer>` runs every property with another seed (a nightly or a local hunt);
 * - `ONCELY_FC_RUNS=<integer>` runs every property that many times instead of its own bound.
 *
 * A failure throws fast-check's report, which names the seed and the shrunk path: rerun with
 * `ONCELY_FC_SEED=<seed>` to get the same counterexample (`path` replays the shrunk case directly
 * when passed to `fc.assert` by hand). A property that runs out of its time limit (shrinking a
 * slow model included) fails with fast-check's report too, instead of the test runner's timeout,
 * which would not name the seed.
 */
import fc from 'fast-check';

/** The seed every property runs with unless `ONCELY_FC_SEED` says otherwise. */
export const DEFAULT_SEED = 20_261_206;

function integerFromEnv(name: string): number | undefined {
  // The browser suite has no process: it runs with the defaults.
  const text = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name];
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  // A typo must not quietly fall back to the defaults: the run would look checked and not be.
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return value;
}

/** The seed of this run. */
export function propertySeed(): number {
  return integerFromEnv('ONCELY_FC_SEED') ?? DEFAULT_SEED;
}

/** How long a property may run, cases and shrinking together; under the test's own timeout. */
export const DEFAULT_TIME_LIMIT_MS = 25_000;

/**
 * fast-check's parameters for a property whose own bound is `runs`.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(fc.string(), (s) => s.length >= 0), propertyParameters(200));
 * ```
 */
export function propertyParameters<Ts>(runs: number, timeLimitMs: number = DEFAULT_TIME_LIMIT_MS): fc.Parameters<Ts> {
  const numRuns = integerFromEnv('ONCELY_FC_RUNS') ?? runs;
  if (numRuns < 1) throw new Error(`ONCELY_FC_RUNS must be at least 1, got ${numRuns}`);
  return { seed: propertySeed(), numRuns, interruptAfterTimeLimit: timeLimitMs, markInterruptAsFailure: true };
}

/**
 * Checks `property` with the suite's settings; rejects with fast-check's report (seed, path,
 * counterexample, the error it raised) when a case fails. A test that gives a property more than
 * {@link DEFAULT_TIME_LIMIT_MS} passes `timeLimitMs` and a longer test timeout.
 *
 * @example
 * ```ts
 * it('sorts', () => checkProperty(fc.property(fc.array(fc.integer()), (a) => isSorted(sort(a))), 200));
 * ```
 */
export async function checkProperty<Ts>(property: fc.IRawProperty<Ts>, runs: number, timeLimitMs?: number): Promise<void> {
  await fc.assert(property, propertyParameters<Ts>(runs, timeLimitMs));
}

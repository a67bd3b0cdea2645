import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, checkProperty, propertyParameters } from './settings.js';

const saved = { seed: process.env.ONCELY_FC_SEED, runs: process.env.ONCELY_FC_RUNS };
afterEach(() => {
  for (const [name, value] of [
    ['ONCELY_FC_SEED', saved.seed],
    ['ONCELY_FC_RUNS', saved.runs],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('property settings', () => {
  it('runs with the fixed seed and the property’s own bound unless the environment says otherwise', () => {
    delete process.env.ONCELY_FC_SEED;
    delete process.env.ONCELY_FC_RUNS;
    expect(propertyParameters(25)).toMatchObject({ seed: DEFAULT_SEED, numRuns: 25 });
    process.env.ONCELY_FC_SEED = '7';
    process.env.ONCELY_FC_RUNS = '1000';
    expect(propertyParameters(25)).toMatchObject({ seed: 7, numRuns: 1000 });
  });

  it('refuses a seed or a count that is not an integer instead of silently using the defaults', () => {
    process.env.ONCELY_FC_SEED = 'forty-two';
    expect(() => propertyParameters(25)).toThrow(/ONCELY_FC_SEED must be an integer/);
    delete process.env.ONCELY_FC_SEED;
    process.env.ONCELY_FC_RUNS = '0';
    expect(() => propertyParameters(25)).toThrow(/ONCELY_FC_RUNS must be at least 1/);
  });

  it('names the seed and the path of a failing case in the error, so that it can be replayed', async () => {
    process.env.ONCELY_FC_SEED = '4242';
    const failing = fc.property(fc.integer({ min: 0, max: 1000 }), (n) => n < 500);
    const error = await checkProperty(failing, 100).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/seed: 4242, path: "[0-9:]+"/);
    // The shrunk counterexample is the smallest failing value.
    expect(message).toContain('Counterexample: [500]');
  });

  it('fails a property that outruns its time limit with the seed in the message, not with a bare timeout', async () => {
    process.env.ONCELY_FC_SEED = '99';
    const slow = fc.asyncProperty(fc.nat(), async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    await expect(checkProperty(slow, 1000, 100)).rejects.toThrow(/seed: 99/);
  });
});

import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/processes.js';

describe('oncely demo', () => {
  it('makes 200 payments through crashes, timeouts and a killed client, with ledger = rail = 200, no duplicate, nothing lost', async () => {
    const run = await runCli(['demo', '--payments', '200', '--seed', '7', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as Record<string, number | boolean | string>;
    expect(result).toMatchObject({
      seed: '7',
      operations: 200,
      ledgerEntries: 200,
      railCharges: 200,
      duplicates: 0,
      lost: 0,
      clientCrashesSurvived: 1,
      ok: true,
    });
    // The chaos really happened: every payment took at least one attempt, and some took more.
    expect(result['attempts']).toBeGreaterThan(200);
    // What the run shows against: every replay was a request a keyless client would have paid again.
    expect(result['replays']).toBeGreaterThan(0);
    expect(result['duplicatesWithoutOncely']).toBe(result['replays']);
  }, 180_000);

  it('refuses a bad --payments with a usage error and starts nothing', async () => {
    const run = await runCli(['demo', '--payments', 'lots']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--payments must be an integer/);
  });
});

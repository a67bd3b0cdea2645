import { describe, expect, it } from 'vitest';
import { renderVerification, type DemoVerification } from '../../src/cli/demo-report.js';

const run: DemoVerification = {
  operations: 500,
  attempts: 1_249,
  replays: 163,
  conflicts409: 0,
  unknown202: 17,
  unavailable503: 15,
  connectionErrors: 257,
  serverCrashesSurvived: 4,
  clientCrashesSurvived: 1,
  ledgerEntries: 500,
  railCharges: 500,
  duplicates: 0,
  lost: 0,
  duplicatesWithoutOncely: 163,
  ok: true,
};

describe('the demo table', () => {
  it('says the connection errors come from the server the demo kills on purpose', () => {
    expect(renderVerification(run)).toMatch(/^ {2}connection errors \(server killed on purpose\) +257$/m);
  });

  it('ends with what the same workload costs without oncely: a duplicate payment per replay', () => {
    const lines = renderVerification(run).trimEnd().split('\n');
    expect(lines.at(-2)).toMatch(/^ {2}PASS: /);
    expect(lines.at(-1)).toBe(
      '  without oncely: at least 163 duplicate payments; each of the 163 replays answered a request that a client retrying without a key would have paid again',
    );
  });
});

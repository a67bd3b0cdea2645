import { describe, expect, it } from 'vitest';
import { demoFaults } from '../../src/cli/demo.js';
import { createRandom } from '../../src/cli/demo-random.js';
import { planPayments } from '../../src/cli/demo-workload.js';
import { createFaults, FaultKind } from '../../src/reference/faults.js';

describe('the demo plan', () => {
  it('draws the same payments and faults from the same seed, and different ones from another seed', () => {
    const plan = (seed: string) => ({
      payments: planPayments(createRandom(seed).fork('plans'), 0, 50),
      faults: demoFaults(createRandom(seed).fork('faults'), 500),
    });
    expect(plan('7')).toEqual(plan('7'));
    expect(plan('7')).not.toEqual(plan('8'));
  });

  it('plans amounts the rail accepts, unique references, and some duplicate sends and resends', () => {
    const payments = planPayments(createRandom('1'), 0, 500);
    expect(payments.every((p) => Number.isInteger(p.amount) && p.amount >= 1 && p.amount <= 1_000_000)).toBe(true);
    expect(new Set(payments.map((p) => p.reference)).size).toBe(500);
    const duplicates = payments.filter((p) => p.duplicate).length;
    const resends = payments.filter((p) => p.resend).length;
    expect(duplicates).toBeGreaterThan(50);
    expect(resends).toBeGreaterThan(20);
  });

  it('asks the server for faults its parser accepts: two crash points, a rail timeout, a risk 503 and a slow rail', () => {
    const spec = demoFaults(createRandom('42'), 500);
    const rules = createFaults({ spec }).rules;
    const crashes = rules.filter((rule) => rule.kind === FaultKind.CrashAfter);
    expect(crashes).toHaveLength(2);
    expect(crashes[0]?.target).not.toBe(crashes[1]?.target);
    expect(rules.map((rule) => rule.kind)).toEqual(['crash-after', 'crash-after', 'timeout', 'unavailable', 'slow']);
  });
});

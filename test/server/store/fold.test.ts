/**
 * Folding a mark, a phase and the point after it into one write: the last point, every data
 * patch in order (keys holding `undefined` dropped, as JSON drops them from separate writes), and
 * durable when any of the three is.
 */
import { describe, expect, it } from 'vitest';
import { folded, hasData, phasePatch } from '../../../src/server/store/fold.js';

const relaxed = { leaseMs: 1000, durable: false } as const;

describe('folded', () => {
  it('is durable when any folded point is, and relaxed only when all are', () => {
    const phase = { recoveryPoint: 'H2_DONE', ...relaxed };
    const mark = { recoveryPoint: 'EXT1_DONE', ...relaxed };
    const sent = { recoveryPoint: 'EXT2_SENT', leaseMs: 2000, durable: true };
    expect(folded(mark, phase, {}, undefined)).toMatchObject({ recoveryPoint: 'H2_DONE', leaseMs: 1000, durable: false });
    expect(folded(mark, phase, {}, sent)).toMatchObject({ recoveryPoint: 'EXT2_SENT', leaseMs: 2000, durable: true });
    expect(folded(undefined, { recoveryPoint: 'H2_DONE', leaseMs: 1000 }, {}, undefined).durable).toBe(true);
    expect(folded({ recoveryPoint: 'EXT1_DONE', leaseMs: 1000 }, phase, {}, undefined).durable).toBe(true);
  });

  it('merges the data in write order and drops keys holding undefined', () => {
    const point = folded(
      { recoveryPoint: 'EXT1_DONE', ...relaxed, data: { a: 'mark', b: 'mark', c: 'mark' } },
      { recoveryPoint: 'H2_DONE', ...relaxed },
      { b: 'phase', c: undefined },
      { recoveryPoint: 'EXT2_SENT', ...relaxed, data: { c: 'sent', d: undefined } },
    );
    expect(point.data).toEqual({ a: 'mark', b: 'phase', c: 'sent' });
    expect(Object.keys(point.data)).not.toContain('d');
  });
});

describe('phasePatch and hasData', () => {
  it('puts what the work produced after the phase\'s own data, and sees no data in undefined values', () => {
    expect(phasePatch({ recoveryPoint: 'H1_DONE', leaseMs: 1, data: { a: 1, b: 1 }, dataFrom: (n: number | undefined) => ({ b: n }) }, 2)).toEqual({ a: 1, b: 2 });
    expect(hasData(undefined)).toBe(false);
    expect(hasData({ risk: undefined })).toBe(false);
    expect(hasData(Object.create({ inherited: 1 }) as Record<string, unknown>)).toBe(false);
    expect(hasData({ risk: 'low' })).toBe(true);
  });
});

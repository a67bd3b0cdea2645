/**
 * The store core's pure pieces: a phase folded with the mark before it and the point after it
 * into one point (the last point, every data patch in write order, keys holding `undefined`
 * dropped as JSON drops them from separate writes), and the response size check.
 */
import { describe, expect, it } from 'vitest';
import { finalOf, hasData, pointOf } from '../../../src/server/store/core.js';

describe('pointOf', () => {
  it("leaves the row at the last point given, with the phase's lease", () => {
    expect(pointOf({ recoveryPoint: 'H2_DONE', leaseMs: 1000 }, undefined)).toEqual({ recoveryPoint: 'H2_DONE', leaseMs: 1000, data: {} });
    expect(pointOf({ recoveryPoint: 'H2_DONE', leaseMs: 1000, before: { recoveryPoint: 'EXT1_DONE' } }, undefined).recoveryPoint).toBe('H2_DONE');
    expect(
      pointOf({ recoveryPoint: 'H2_DONE', leaseMs: 1000, before: { recoveryPoint: 'EXT1_DONE' }, after: { recoveryPoint: 'EXT2_SENT' } }, undefined),
    ).toEqual({
      recoveryPoint: 'EXT2_SENT',
      leaseMs: 1000,
      data: {},
    });
  });

  it('merges the data in write order (before, data, what the work produced, after) and drops keys holding undefined', () => {
    const point = pointOf(
      {
        recoveryPoint: 'H2_DONE',
        leaseMs: 1000,
        before: { recoveryPoint: 'EXT1_DONE', data: { a: 'mark', b: 'mark', c: 'mark', e: 'mark' } },
        data: { b: 'phase', c: undefined },
        dataFrom: (n: number | undefined) => ({ c: 'work', e: undefined, n }),
        after: { recoveryPoint: 'EXT2_SENT', data: { c: 'sent', d: undefined } },
      },
      2,
    );
    expect(point.data).toEqual({ a: 'mark', b: 'phase', c: 'sent', e: 'mark', n: 2 });
    expect(Object.keys(point.data)).not.toContain('d');
  });
});

describe('hasData and finalOf', () => {
  it('sees no data in undefined values or inherited keys', () => {
    expect(hasData(undefined)).toBe(false);
    expect(hasData({ risk: undefined })).toBe(false);
    expect(hasData(Object.create({ inherited: 1 }) as Record<string, unknown>)).toBe(false);
    expect(hasData({ risk: 'low' })).toBe(true);
  });

  it("computes the response from the work's result and refuses one over the limit, naming the store and both sizes", () => {
    expect(finalOf('s', 'k', 10, (n: number | undefined) => ({ status: 201, headers: {}, body: String(n) }), 7)).toEqual({
      status: 201,
      headers: {},
      body: '7',
    });
    expect(() => finalOf('myStore', 'k1', 3, { status: 201, headers: {}, body: 'é12' }, undefined)).toThrow(
      'myStore: the 4-byte response of key "k1" exceeds maxResponseBytes (3)',
    );
  });
});

import { describe, expect, it } from 'vitest';
import { isOncelyError } from '../../src/errors.js';
import { createClients, parseClients } from '../../src/reference/clients.js';
import { createFaults, parseFaultSpec } from '../../src/reference/faults.js';

describe('fault specs', () => {
  it('parses the PROTOCOL.md example and every documented kind', () => {
    expect(parseFaultSpec('crash-after:EXT2_SENT:0.2,timeout:ext2:0.1,unavailable:ext1:0.05')).toEqual([
      { kind: 'crash-after', target: 'EXT2_SENT', value: 0.2, max: Infinity },
      { kind: 'timeout', target: 'ext2', value: 0.1, max: Infinity },
      { kind: 'unavailable', target: 'ext1', value: 0.05, max: Infinity },
    ]);
    expect(parseFaultSpec(' lost:ext1:1:2 , probe-timeout:ext2:0.5 ,slow:ext2:250,')).toHaveLength(3);
    expect(parseFaultSpec('')).toEqual([]);
  });

  it.each([
    ['an unknown kind', 'explode:ext1:1'],
    ['an unknown recovery point', 'crash-after:H3_DONE:1'],
    ['an unknown system', 'timeout:ext3:1'],
    ['a probability above 1', 'timeout:ext2:1.5'],
    ['a negative probability', 'timeout:ext2:-0.1'],
    ['a probability that is not a number', 'timeout:ext2:often'],
    ['a missing value', 'timeout:ext2'],
    ['a zero max', 'timeout:ext2:1:0'],
    ['a fractional max', 'timeout:ext2:1:1.5'],
    ['too many fields', 'timeout:ext2:1:1:1'],
  ])('refuses %s with a config error naming the entry', (_name, spec) => {
    let thrown: unknown;
    try {
      parseFaultSpec(spec);
    } catch (error) {
      thrown = error;
    }
    expect(isOncelyError(thrown, 'CONFIG')).toBe(true);
    expect((thrown as Error).message).toContain(JSON.stringify(spec));
  });

  it('fires a probability-1 fault every time, a probability-0 fault never, and stops after max', () => {
    const faults = createFaults({ spec: 'timeout:ext1:1,timeout:ext2:0,lost:ext2:1:2', random: () => 0 });
    expect([1, 2, 3].map(() => faults.fires('timeout', 'ext1'))).toEqual([true, true, true]);
    expect(faults.fires('timeout', 'ext2')).toBe(false);
    expect([1, 2, 3].map(() => faults.fires('lost', 'ext2'))).toEqual([true, true, false]);
    expect(faults.fires('lost', 'ext1')).toBe(false);
  });

  it('fires a probabilistic fault when the random draw falls below its probability', () => {
    const draws = [0.1, 0.3, 0.19];
    const faults = createFaults({ spec: 'unavailable:ext1:0.2', random: () => draws.shift() ?? 1 });
    expect([faults.fires('unavailable', 'ext1'), faults.fires('unavailable', 'ext1'), faults.fires('unavailable', 'ext1')]).toEqual([true, false, true]);
  });

  it('adds up the delay of slow faults per system', () => {
    const faults = createFaults({ spec: 'slow:ext2:100,slow:ext2:50' });
    expect(faults.delayMs('ext2')).toBe(150);
    expect(faults.delayMs('ext1')).toBe(0);
  });
});

describe('caller tokens', () => {
  it('maps the demo tokens to acme and globex and rejects anything else', () => {
    const clients = createClients();
    expect(clients.authenticate('Bearer test_acme')).toBe('acme');
    expect(clients.authenticate('bearer test_globex')).toBe('globex');
    expect(clients.authenticate('Bearer test_nobody')).toBeUndefined();
    expect(clients.authenticate('Basic dGVzdF9hY21lOg==')).toBeUndefined();
    expect(clients.authenticate('Bearer constructor')).toBeUndefined();
    expect(clients.authenticate(null)).toBeUndefined();
    expect(clients.demo).toBe(true);
  });

  it.each([
    ['a client id with a space', { tok: 'acme eu' }],
    ['a client id with a slash', { tok: 'acme/eu' }],
    ['a non-ASCII client id', { tok: 'acmé' }],
    ['an empty client id', { tok: '' }],
    ['a client id that is not a string', { tok: 7 }],
    ['a token with whitespace', { 'tok en': 'acme' }],
    ['an empty map', {}],
    ['an array', ['acme']],
  ])('refuses a clients file with %s', (_name, value) => {
    expect(() => parseClients(value)).toThrow(/client|token|object|callers/);
  });
});

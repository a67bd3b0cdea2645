import { describe, expect, it } from 'vitest';
import { compositeId } from '../src/composite-id.js';

describe('compositeId', () => {
  it('writes each part as its UTF-8 byte length, a colon and the part', () => {
    expect(compositeId('org:acme', 'inv-1')).toBe('8:org:acme5:inv-1');
    expect(compositeId('ä', '😀', '')).toBe('2:ä4:😀0:');
    // A lone surrogate is written as U+FFFD would be: three bytes.
    expect(compositeId('\ud800')).toBe('3:\ud800');
  });

  it('gives every split of one text into parts an identifier of its own', () => {
    const text = 'org:acme:inv-1:ä';
    const splits = new Set<string>();
    let count = 0;
    for (let i = 0; i <= text.length; i += 1) {
      for (let j = i; j <= text.length; j += 1) {
        splits.add(compositeId(text.slice(0, i), text.slice(i, j), text.slice(j)));
        count += 1;
      }
    }
    expect(splits.size).toBe(count);
  });
});

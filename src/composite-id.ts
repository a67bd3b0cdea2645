/**
 * One identifier made of several parts that other parties chose (a caller id, a key, a scope).
 *
 * Joining such parts with a separator is ambiguous as soon as a part may contain the separator:
 * caller `org:acme` with key `inv-1` and caller `org` with key `acme:inv-1` both join to
 * `org:acme:inv-1`. Here every part is written as its length in UTF-8 bytes, `:`, then the part
 * itself, so the parts can be read back one by one and no two different tuples share an identifier,
 * whatever characters they hold. The UTF-8 length (not JavaScript's UTF-16 length) makes the rule
 * one that any language can compute, which matters where the identifier leaves the process (the
 * derived keys an external system sees, the payload PostgreSQL computes for a NOTIFY).
 *
 * @module
 */

/**
 * The number of bytes `text` takes in UTF-8, as `TextEncoder` (and node:crypto's `'utf8'`)
 * encodes it: a lone surrogate becomes U+FFFD, three bytes.
 */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The parts written one after another, each as `<UTF-8 byte length>:<part>`.
 *
 * @example
 * ```ts
 * compositeId('org:acme', 'inv-1'); // '8:org:acme5:inv-1'
 * compositeId('org', 'acme:inv-1'); // '3:org10:acme:inv-1' (another identifier)
 * ```
 */
export function compositeId(...parts: readonly string[]): string {
  let id = '';
  for (const part of parts) id += `${utf8Length(part)}:${part}`;
  return id;
}

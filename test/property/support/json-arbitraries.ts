/**
 * JSON values for the fingerprint properties: a value, the many texts that spell it (members in
 * any order, any insignificant whitespace), and a mutation of it that changes the value.
 */
import fc from 'fast-check';

/** A JSON value as `JSON.parse` returns it. */
export type Json = null | boolean | number | string | Json[] | { [name: string]: Json };

/** Whether `a` and `b` are the same JSON value (numbers compare as numbers: `0` is `-0`). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i] as Json));
  }
  const names = Object.keys(a);
  return (
    names.length === Object.keys(b).length &&
    names.every((name) => Object.prototype.hasOwnProperty.call(b, name) && jsonEqual(a[name] as Json, b[name] as Json))
  );
}

/**
 * JSON values whose strings hold any Unicode scalar value (no lone surrogates, no NUL: the
 * server refuses both with a `400`, PROTOCOL.md "Request bodies").
 */
export const jsonValue = (maxDepth = 4): fc.Arbitrary<Json> =>
  fc.jsonValue({ maxDepth, stringUnit: 'grapheme' }).filter((value) => !JSON.stringify(value).includes('\\u0000')) as fc.Arbitrary<Json>;

const WHITESPACE = fc.stringMatching(/^[ \t\n\r]{0,3}$/);

/**
 * A text of `value` spelled at random: members in a random order, random insignificant
 * whitespace around every token, strings escaped or not as `JSON.stringify` does.
 */
export function spell(value: Json, g: fc.GeneratorValue): string {
  const ws = (): string => g(() => WHITESPACE);
  if (value === null || typeof value !== 'object') return `${ws()}${JSON.stringify(value)}${ws()}`;
  if (Array.isArray(value)) return `${ws()}[${value.length === 0 ? ws() : value.map((item) => spell(item, g)).join(',')}]${ws()}`;
  const names = g(() => fc.shuffledSubarray(Object.keys(value), { minLength: Object.keys(value).length }));
  const members = names.map((name) => `${ws()}${JSON.stringify(name)}${ws()}:${spell(value[name] as Json, g)}`);
  return `${ws()}{${members.length === 0 ? ws() : members.join(',')}}${ws()}`;
}

type Mutation = 'replace' | 'add' | 'remove' | 'rename' | 'insert' | 'swap';

/**
 * A copy of `value` with one change somewhere inside it: a leaf or a subtree replaced, a member
 * added, removed or renamed, an array element inserted, removed or two elements swapped. The
 * change may happen to leave the value equal (swapping equal elements): callers check with
 * {@link jsonEqual}.
 */
export function mutate(value: Json, g: fc.GeneratorValue): Json {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((item, i) => [String(i), item] as const) : Object.entries(value);
    // Descend into a child, or change this container (or replace it entirely).
    if (entries.length > 0 && g(() => fc.boolean())) {
      const at = g(() => fc.nat({ max: entries.length - 1 }));
      const [name, child] = entries[at] as readonly [string, Json];
      if (Array.isArray(value)) return value.map((item, i) => (i === at ? mutate(child, g) : item));
      return { ...value, [name]: mutate(child, g) };
    }
    const kinds: Mutation[] = Array.isArray(value) ? ['replace', 'insert', 'remove', 'swap'] : ['replace', 'add', 'remove', 'rename'];
    const kind = g(() => fc.constantFrom(...kinds));
    if (kind !== 'replace' && entries.length > 0) {
      const at = g(() => fc.nat({ max: entries.length - 1 }));
      if (Array.isArray(value)) {
        const copy = [...value];
        if (kind === 'remove') copy.splice(at, 1);
        if (kind === 'insert')
          copy.splice(
            g(() => fc.nat({ max: copy.length })),
            0,
            g(() => jsonValue(2)),
          );
        if (kind === 'swap') {
          const other = g(() => fc.nat({ max: copy.length - 1 }));
          [copy[at], copy[other]] = [copy[other] as Json, copy[at] as Json];
        }
        return copy;
      }
      const [name, child] = entries[at] as readonly [string, Json];
      // Entries, not assignment: a member named "__proto__" must stay a member.
      const others = entries.filter(([other]) => other !== name);
      const fresh = (): string => g(() => fc.string({ unit: 'grapheme', maxLength: 6 }).filter((n) => !Object.prototype.hasOwnProperty.call(value, n)));
      if (kind === 'remove') return Object.fromEntries(others);
      if (kind === 'add') return Object.fromEntries([...entries, [fresh(), g(() => jsonValue(2))]]);
      return Object.fromEntries([...others, [fresh(), child]]);
    }
    if (kind === 'insert' || kind === 'add') {
      return Array.isArray(value)
        ? [g(() => jsonValue(2))]
        : Object.fromEntries([[g(() => fc.string({ unit: 'grapheme', maxLength: 6 })), g(() => jsonValue(2))]]);
    }
  }
  return g(() => jsonValue(2).filter((other) => !jsonEqual(other, value)));
}

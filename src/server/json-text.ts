/**
 * What the server refuses in a JSON body before anything walks it: a request it could never
 * process is a `400` on every store, never a `503` that a retry cannot cure (PROTOCOL.md,
 * "Request bodies").
 *
 * - nesting deeper than {@link MAX_JSON_DEPTH} (the fingerprint's canonical form and the stores'
 *   JSON walk the value recursively);
 * - NUL (`\u0000`) anywhere: PostgreSQL's `text` and `jsonb` cannot hold it, SQLite can, and the
 *   two stores must answer alike;
 * - an unpaired UTF-16 surrogate (`\ud800` without its partner): it cannot be stored as UTF-8, so
 *   what was acknowledged would differ from what is read back;
 * - a member name twice in one object (`{"amount":1,"amount":2}`): `JSON.parse` keeps the last,
 *   a proxy or validator in front may keep the first, and the two would disagree on the amount
 *   (I-JSON, RFC 7493, forbids it);
 * - a number beyond the range of a double (`1e400`): it would share its fingerprint with `null`.
 *
 * One pass over the text, no recursion, so a hostile body costs no stack.
 *
 * @module
 */

/** The deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Why `text` (a JSON body) is refused, or `undefined` when it is acceptable. Syntax errors are
 * left to `JSON.parse`.
 *
 * @example
 * ```ts
 * jsonTextProblem('{"a":"\\u0000"}'); // 'the body contains a NUL character (\\u0000), which cannot be stored'
 * jsonTextProblem('{"amount":1250}'); // undefined
 * ```
 */
export function jsonTextProblem(text: string, maxDepth: number = MAX_JSON_DEPTH): string | undefined {
  let depth = 0;
  let inString = false;
  // Per open container: the member names seen so far (an object) or null (an array).
  const containers: Array<Set<string> | null> = [];
  let expectName = false;
  let nameStart = -1;
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 0) return nul();
    if (code >= 0xd800 && code <= 0xdfff) {
      // A raw surrogate: only a high one followed by a low one is a character.
      if (code <= 0xdbff && isLow(text.charCodeAt(at + 1))) at += 1;
      else return unpaired(code);
      continue;
    }
    if (inString) {
      if (code === QUOTE) {
        inString = false;
        if (nameStart >= 0) {
          const repeated = memberRepeated(containers[containers.length - 1], text.slice(nameStart, at + 1));
          if (repeated !== undefined) return `the body names the member ${repeated} twice in one object`;
        }
      } else if (code === BACKSLASH) {
        if (text.charCodeAt(at + 1) !== 0x75 /* u */) {
          at += 1;
          continue;
        }
        const unit = hex(text, at + 2);
        if (unit === 0) return nul();
        if (unit >= 0xd800 && unit <= 0xdbff) {
          // A high surrogate must be followed at once by an escaped low one.
          const next = text.charCodeAt(at + 6) === BACKSLASH && text.charCodeAt(at + 7) === 0x75 ? hex(text, at + 8) : -1;
          if (!isLow(next)) return unpaired(unit);
          at += 11;
        } else if (unit >= 0xdc00 && unit <= 0xdfff) {
          return unpaired(unit);
        } else {
          at += 5;
        }
      }
      continue;
    }
    if (code === QUOTE) {
      inString = true;
      nameStart = expectName ? at : -1;
      expectName = false;
    } else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      depth += 1;
      if (depth > maxDepth) return `the body nests deeper than ${maxDepth} levels of arrays and objects`;
      containers.push(code === 0x7b ? new Set() : null);
      expectName = code === 0x7b;
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) {
      depth -= 1;
      containers.pop();
    } else if (code === 0x2c /* , */) expectName = containers[containers.length - 1] instanceof Set;
    else if (code === 0x65 || code === 0x45 /* e E: an exponent, outside a string only in a number */) {
      const problem = numberProblem(text, at);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

/**
 * A number whose exponent takes it past a double (`1e400`): `JSON.parse` reads it as Infinity,
 * which the canonical form writes as `null`, so two different requests (`1e400` and `null`) would
 * share a fingerprint, and the second be answered as the first's replay. Only a literal with an
 * exponent can overflow within the body cap (a double holds 308 digits).
 */
function numberProblem(text: string, exponentAt: number): string | undefined {
  let start = exponentAt;
  while (start > 0 && /[0-9.+-]/.test(text.charAt(start - 1))) start -= 1;
  let end = exponentAt + 1;
  while (end < text.length && /[0-9+-]/.test(text.charAt(end))) end += 1;
  const literal = text.slice(start, end);
  // The e of true or false is no exponent (nothing numeric before it); a malformed literal is NaN
  // and left to JSON.parse: only an infinite value is refused here.
  return Math.abs(Number(literal)) !== Infinity ? undefined : `the body holds the number ${literal.slice(0, 40)}, beyond the range of a double`;
}

/**
 * Adds the member name `literal` (its JSON text, quotes included) to `names`; the name as JSON
 * text when it was there already (`"\u0061"` and `"a"` are one name). A name `JSON.parse` cannot
 * read is left to it.
 */
function memberRepeated(names: Set<string> | null | undefined, literal: string): string | undefined {
  if (!names) return undefined;
  let name = literal;
  if (literal.includes('\\')) {
    try {
      name = JSON.stringify(JSON.parse(literal) as string);
    } catch {
      return undefined;
    }
  }
  if (names.has(name)) return name;
  names.add(name);
  return undefined;
}

const nul = (): string => 'the body contains a NUL character (\\u0000), which cannot be stored';
const unpaired = (unit: number): string =>
  `the body contains an unpaired UTF-16 surrogate (\\u${unit.toString(16).padStart(4, '0')}), which is not a character`;
const isLow = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff;

/** The four hex digits at `at` as a number, or -1 (a syntax error `JSON.parse` will report). */
function hex(text: string, at: number): number {
  const digits = text.slice(at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : -1;
}

/**
 * The literal text of the number a top-level member `name` of the JSON object `text` holds, or
 * `undefined` (absent, not a number, or not an object). Lets a parser see what the client wrote:
 * `12.9999999999999999` parses to the double 13, but it is not an integer amount.
 *
 * @example
 * ```ts
 * numberLiteral('{"amount": 12.9999999999999999}', 'amount'); // '12.9999999999999999'
 * ```
 */
export function numberLiteral(text: string, name: string): string | undefined {
  let depth = 0;
  let member: string | undefined;
  let expectValue = false;
  // The last occurrence counts, as it does for JSON.parse.
  let found: string | undefined;
  const value = (literal: string | undefined): void => {
    if (member === name) found = literal;
    expectValue = false;
  };
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      // A whole string: a member name at depth 1, or a value.
      let end = at + 1;
      while (end < text.length && text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1;
      if (depth === 1 && !expectValue) {
        try {
          member = JSON.parse(text.slice(at, end + 1)) as string;
        } catch {
          return undefined;
        }
      } else if (expectValue) value(undefined);
      at = end;
    } else if (code === 0x3a /* : */) expectValue = depth === 1;
    else if (code === 0x5b || code === 0x7b) {
      if (expectValue) value(undefined);
      depth += 1;
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
    else if (expectValue && (code === 0x2d || (code >= 0x30 && code <= 0x39))) {
      const literal = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(at, at + 400))?.[0];
      value(literal);
      at += (literal?.length ?? 1) - 1;
    } else if (expectValue && code > 0x20) value(undefined); // true, false, null
  }
  return found;
}

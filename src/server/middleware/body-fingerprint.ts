/**
 * The bytes a guarded request's fingerprint hashes, from its body as the framework has it: raw
 * bytes, a body parser's result, or none.
 *
 * @module
 * @internal
 */
import { canonicalJson, canonicalisesJson, fingerprintInput, fingerprintInputParsed } from '../../fingerprint.js';
import { MAX_JSON_DEPTH } from '../json-text.js';
import type { Fingerprinted } from '../pre-admission.js';
import type { GuardedBody, GuardedRequest } from './types.js';

/** Deeper than `max` levels of arrays and objects (checked without recursion, before any recursive walk). */
function tooDeep(value: unknown, max: number): boolean {
  const stack: Array<[object, number]> = [[value as object, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [item, depth] = next;
    if (depth > max) return true;
    for (const member of Object.values(item)) if (member !== null && typeof member === 'object') stack.push([member as object, depth + 1]);
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const DEEP = `the body is nested deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * The fingerprint's bytes (nothing else kept), or why the body is refused. A JSON body is fingerprinted as its canonical JSON whether it arrives
 * as text or already parsed, so a body parser mounted before the guard changes nothing.
 */
export function fingerprintOf(request: GuardedRequest, body: GuardedBody): Fingerprinted<undefined> {
  const { method, path, contentType } = request;
  if ('none' in body || ('parsed' in body && body.parsed === undefined)) return { bytes: fingerprintInput(method, path, undefined), kept: undefined };
  let value = 'parsed' in body ? body.parsed : body.raw;
  if (value instanceof Uint8Array) {
    const bytes = value;
    const raw = () => ({ bytes: fingerprintInput(method, path, bytes, { contentType }), kept: undefined });
    if (!canonicalisesJson(contentType)) return raw();
    try {
      value = utf8.decode(bytes);
    } catch {
      return raw(); // not UTF-8: the bytes as they are
    }
  }
  if (typeof value === 'string') {
    let canonical: string | undefined;
    if (value.length > 0 && canonicalisesJson(contentType)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        // Not JSON after all: its text is fingerprinted as it is, as the protocol says.
        return { bytes: fingerprintInputParsed(method, path, value, contentType, undefined), kept: undefined };
      }
      if (parsed !== null && typeof parsed === 'object' && tooDeep(parsed, MAX_JSON_DEPTH)) return { refused: DEEP };
      canonical = canonicalJson(parsed);
    }
    return { bytes: fingerprintInputParsed(method, path, value, contentType, canonical), kept: undefined };
  }
  if (value !== null && typeof value === 'object' && tooDeep(value, MAX_JSON_DEPTH)) return { refused: DEEP };
  const canonical = canonicalJson(value);
  return { bytes: fingerprintInputParsed(method, path, canonical, 'application/json', canonical), kept: undefined };
}

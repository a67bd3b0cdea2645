/**
 * The request fingerprint of `PROTOCOL.md`: SHA-256 over `METHOD \n path \n canonical-body`.
 *
 * Shared by the client (which refuses a key reused with other bytes before anything is sent)
 * and the server (which answers `422` to the same mistake). Uses WebCrypto, so it runs
 * unchanged in browsers and in Node. The bytes hashed ({@link fingerprintInput}) and the hash
 * ({@link FingerprintDigest}) are separate so a server can swap in a faster synchronous SHA-256
 * (`nodeDigest` from `oncely/server`) without ever computing a different fingerprint.
 *
 * @module
 */

/** A request body as the fingerprint sees it. */
export type FingerprintBody = string | Uint8Array | null | undefined;

/** Options of {@link fingerprint}. */
export interface FingerprintOptions {
  /**
   * The request's `Content-Type`. A JSON media type (`application/json`, `*+json`) makes the
   * body canonicalised; any other type hashes the raw bytes. When omitted, a string body that
   * parses as JSON is canonicalised.
   */
  readonly contentType?: string | null | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Serialises a JSON value canonically: object keys sorted (by UTF-16 code units, as
 * `Array.prototype.sort` does), no insignificant whitespace, array order kept.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] }); // '{"a":[2,{"c":4,"d":3}],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    // JSON.stringify returns undefined for undefined/functions/symbols; JSON has no such values.
    return text ?? 'null';
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  }
  const record = value as Record<string, unknown>;
  const members: string[] = [];
  for (const name of Object.keys(record).sort()) {
    const member = record[name];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    members.push(`${JSON.stringify(name)}:${canonicalJson(member)}`);
  }
  return `{${members.join(',')}}`;
}

function isJsonType(contentType: string): boolean {
  // The one type nearly every request carries, without splitting it.
  if (contentType === 'application/json') return true;
  const essence = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return essence === 'application/json' || essence.endsWith('+json');
}

function canonicalBodyBytes(body: FingerprintBody, contentType: string | null | undefined): Uint8Array {
  if (body === null || body === undefined) return new Uint8Array(0);
  const wantJson = contentType === null || contentType === undefined ? typeof body === 'string' : isJsonType(contentType);
  if (wantJson) {
    let text: string | undefined;
    try {
      text = typeof body === 'string' ? body : decoder.decode(body);
    } catch {
      text = undefined; // not UTF-8: hash the raw bytes
    }
    if (text !== undefined) {
      try {
        return encoder.encode(canonicalJson(JSON.parse(text)));
      } catch {
        // Not JSON after all: fall through to the raw bytes, as the protocol says.
      }
    }
  }
  return typeof body === 'string' ? encoder.encode(body) : body;
}

/**
 * A SHA-256 implementation for the fingerprint: the lower-case hex digest of `input`.
 * Any implementation must return the SHA-256 of those bytes as lower-case hex (what
 * `crypto.subtle.digest('SHA-256', input)` gives, hex-encoded).
 *
 * @example
 * ```ts
 * import { createHash } from 'node:crypto';
 * const digest: FingerprintDigest = (input) => createHash('sha256').update(input).digest('hex');
 * ```
 */
export type FingerprintDigest = (input: Uint8Array<ArrayBuffer>) => string | Promise<string>;

// One table lookup per byte instead of a toString/padStart/array per byte.
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * The platform-neutral {@link FingerprintDigest}: WebCrypto's SHA-256, in lower-case hex.
 * Asynchronous and, in Node, several times slower than `node:crypto` for inputs this small.
 *
 * @example
 * ```ts
 * await webCryptoDigest(new TextEncoder().encode('abc'));
 * // 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
 * ```
 */
export async function webCryptoDigest(input: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', input));
  let hex = '';
  for (const byte of digest) hex += HEX[byte];
  return hex;
}

/** The slice of `node:crypto` {@link defaultDigest} uses. */
interface NodeCryptoLike {
  createHash(algorithm: 'sha256'): { update(data: Uint8Array): { digest(encoding: 'hex'): string } };
  /** One-shot (Node ≥ 20.12): no `Hash` object per digest, about half the CPU of `createHash` for a fingerprint. */
  hash?: (algorithm: 'sha256', data: Uint8Array, encoding: 'hex') => string;
}

/**
 * The best {@link FingerprintDigest} of the running platform: `node:crypto`'s synchronous
 * SHA-256 where `process.getBuiltinModule` reaches it (Node ≥ 20.16, Deno, Bun), otherwise
 * {@link webCryptoDigest}. It reaches `node:crypto` without an `import`, so bundles for the
 * browser stay free of Node built-ins. Both give identical fingerprints.
 *
 * @example
 * ```ts
 * const digest = defaultDigest();
 * await digest(new TextEncoder().encode('abc')); // 'ba7816bf…15ad'
 * ```
 */
export function defaultDigest(): FingerprintDigest {
  const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const nodeCrypto = typeof getBuiltin === 'function' ? (getBuiltin('node:crypto') as NodeCryptoLike | undefined) : undefined;
  if (!nodeCrypto || typeof nodeCrypto.createHash !== 'function') return webCryptoDigest;
  const hash = nodeCrypto.hash;
  if (typeof hash === 'function') return (input) => hash('sha256', input, 'hex');
  return (input) => nodeCrypto.createHash('sha256').update(input).digest('hex');
}

/**
 * The exact bytes the fingerprint hashes: `METHOD + "\n" + path + "\n" + canonical-body`.
 * Hashing them with any {@link FingerprintDigest} gives {@link fingerprint}'s result.
 *
 * @param method the HTTP method (upper-cased here)
 * @param path the request path with its query, e.g. `/v1/payments`
 * @param body the body as sent; JSON bodies are canonicalised first
 *
 * @example
 * ```ts
 * const bytes = fingerprintInput('POST', '/v1/payments', '{ "b": 2, "a": 1 }');
 * new TextDecoder().decode(bytes); // 'POST\n/v1/payments\n{"a":1,"b":2}'
 * ```
 */
export function fingerprintInput(method: string, path: string, body?: FingerprintBody, options: FingerprintOptions = {}): Uint8Array<ArrayBuffer> {
  const head = `${method.toUpperCase()}\n${path}\n`;
  if (typeof body === 'string' || body === null || body === undefined) {
    // One encode of one string: the same bytes as encoding the parts separately.
    return encoder.encode(head + canonicalBodyText(body ?? '', options.contentType, body === null || body === undefined));
  }
  return concat(encoder.encode(head), canonicalBodyBytes(body, options.contentType));
}

/**
 * Whether the fingerprint canonicalises a JSON body sent with this content type (`null`: the
 * request had none).
 *
 * @internal
 */
export function canonicalisesJson(contentType: string | null): boolean {
  return contentType === null || isJsonType(contentType);
}

/**
 * {@link fingerprintInput} for a text body whose canonical JSON the caller has already computed
 * (`canonical`: `canonicalJson(JSON.parse(text))`, taken only when {@link canonicalisesJson}),
 * so the server does not parse each request body twice. Gives exactly the bytes
 * `fingerprintInput(method, path, text, { contentType })` gives.
 *
 * @internal
 */
export function fingerprintInputParsed(
  method: string,
  path: string,
  text: string,
  contentType: string | null,
  canonical: string | undefined,
): Uint8Array<ArrayBuffer> {
  const tail = canonical !== undefined && text.length > 0 && canonicalisesJson(contentType) ? canonical : canonicalBodyText(text, contentType, false);
  return encoder.encode(`${method.toUpperCase()}\n${path}\n${tail}`);
}

function canonicalBodyText(text: string, contentType: string | null | undefined, absent: boolean): string {
  if (absent) return '';
  const wantJson = contentType === null || contentType === undefined ? true : isJsonType(contentType);
  if (wantJson) {
    try {
      return canonicalJson(JSON.parse(text));
    } catch {
      // Not JSON after all: the text as it is, as the protocol says.
    }
  }
  return text;
}

function concat(head: Uint8Array, tail: Uint8Array): Uint8Array<ArrayBuffer> {
  const input = new Uint8Array(head.length + tail.length);
  input.set(head, 0);
  input.set(tail, head.length);
  return input;
}

/**
 * Computes the request fingerprint: lower-case hex SHA-256 of
 * `METHOD + "\n" + path + "\n" + canonical-body`.
 *
 * @param method the HTTP method (upper-cased here)
 * @param path the request path with its query, e.g. `/v1/payments`
 * @param body the body as sent; JSON bodies are canonicalised first
 *
 * @example
 * ```ts
 * const a = await fingerprint('POST', '/v1/payments', '{"amount":1250,"currency":"EUR"}');
 * const b = await fingerprint('POST', '/v1/payments', '{ "currency": "EUR", "amount": 1250 }');
 * a === b; // true: key order and whitespace do not matter
 * ```
 */
export async function fingerprint(method: string, path: string, body?: FingerprintBody, options: FingerprintOptions = {}): Promise<string> {
  return webCryptoDigest(fingerprintInput(method, path, body, options));
}

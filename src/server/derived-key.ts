/**
 * The derived keys a server presents to external systems: the steps API's `Kn` (PROTOCOL.md), and
 * the named keys a guarded handler passes to downstream APIs (`oncely.deriveKey(name)`).
 *
 * @module
 */
import { parse as parseUuid, stringify as stringifyUuid, v5 as uuidv5 } from 'uuid';
import { compositeId } from '../composite-id.js';

/**
 * The derived key of external system `n`: `uuid5(namespace, L(clientId) + L(key) + L("ext" + n))`,
 * where `L(s)` is the UTF-8 byte length of `s` in decimal, `:`, then `s` (`compositeId` in src/composite-id.ts).
 *
 * Unambiguous whatever the parts hold: caller `org:acme` with key `inv-1` and caller `org` with
 * key `acme:inv-1` present two different keys to the rail, so neither can reach the other's
 * charge. (Joined with `:` they named the same one.) Deterministic, so a resumed attempt presents
 * the key the dead attempt used and the external system treats it as a replay.
 *
 * @example
 * ```ts
 * externalKey(DEFAULT_NAMESPACE, 'acme', '0193a5f2-7c1e', 2); // the K2 the rail sees
 * ```
 */
export function externalKey(namespace: string, clientId: string, key: string, n: number): string {
  return downstreamKey(namespace, clientId, key, `ext${n}`);
}

/**
 * The key a guarded handler presents to a downstream API for its call `name`: the derivation of
 * {@link externalKey} with `name` in place of `"ext" + n`, i.e.
 * `uuid5(namespace, L(clientId) + L(key) + L(name))`. A retry of the same request (same caller,
 * same key) derives the same key again, so a downstream API that deduplicates by it (Stripe's
 * `Idempotency-Key`, the reference rail) applies the call once even when a crash between its
 * effect and the stored response makes the handler run again.
 *
 * @example
 * ```ts
 * downstreamKey(DEFAULT_NAMESPACE, 'acme', '0193a5f2-7c1e', 'charge'); // the same on every retry
 * ```
 */
export function downstreamKey(namespace: string, clientId: string, key: string, name: string): string {
  const id = compositeId(clientId, key, name);
  // As UTF-8 bytes: uuid's own string path throws on a lone surrogate (a client id may hold one).
  if (!nodeCrypto) return uuidv5(new TextEncoder().encode(id), namespaceBytes(namespace));
  // RFC 9562 §5.5, as uuid's v5 computes it: SHA-1 of the namespace's bytes and the name's UTF-8,
  // then the version (5) and variant bits. node:crypto takes the string as it is; uuid's generic
  // path first re-encodes it by hand, which cost ~2 % of a first execution's CPU.
  const hash = nodeCrypto.createHash('sha1').update(namespaceBytes(namespace)).update(id, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  return stringifyUuid(hash);
}

interface Sha1Like {
  createHash(algorithm: 'sha1'): { update(data: Uint8Array | string, encoding?: 'utf8'): { update(data: string, encoding: 'utf8'): { digest(): Uint8Array } } };
}

/** node:crypto where `process.getBuiltinModule` reaches it (as `defaultDigest()` does), else uuid's own SHA-1. */
const nodeCrypto: Sha1Like | undefined = (() => {
  const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const crypto = typeof getBuiltin === 'function' ? (getBuiltin('node:crypto') as Partial<Sha1Like> | undefined) : undefined;
  return crypto && typeof crypto.createHash === 'function' ? (crypto as Sha1Like) : undefined;
})();

// uuid's v5 parses a string namespace on every call; a server uses one or two namespaces.
const parsedNamespaces = new Map<string, Uint8Array>();
function namespaceBytes(namespace: string): Uint8Array {
  let bytes = parsedNamespaces.get(namespace);
  if (bytes === undefined) {
    bytes = parseUuid(namespace);
    if (parsedNamespaces.size < 64) parsedNamespaces.set(namespace, bytes);
  }
  return bytes;
}

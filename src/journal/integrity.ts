/**
 * What a journal record must still be before any of it is sent again: the bytes a journal reads
 * back are not trusted to be the bytes the client wrote.
 *
 * A record is resent under its original key, so a body changed on disk — by hand, by another
 * program, by a flipped bit — would reach the server as the same operation with another effect
 * (an amount of 500 becoming 999999, under a key the server may never have seen). The
 * fingerprint, computed from the request before it was journaled, is the check: a record whose
 * method, path, query or body no longer hash to it is damaged. So is one whose URL left its
 * scope's origin: the resuming client's credentials are for that origin only; or one holding a
 * credential header, which would stand in for the resuming client's own. A damaged record
 * is reported (`pending()`, `resume()`, `oncely pending`), never sent, never rewritten.
 *
 * Where it is checked: every record read back from the journal before its chain's first attempt
 * (`send()` of a prepared or earlier operation, `resume()`, the Service Worker's resume); the
 * retries of a chain send the record it checked, from memory. A record the client has just
 * built is not read back, so it needs no check.
 *
 * The fingerprint covers the request alone (the protocol defines it so). The rest of what is acted
 * on — the key, the scope, the state and outcome, `submittedAt`, the timestamps, the headers —
 * is covered by the row's seal (`seal.ts`), which the journal itself checks on every read: a row
 * changed there never reaches this check, it is reported damaged by the journal.
 *
 * Limits, on purpose: the fingerprint is SHA-256 over public inputs, kept in the same row, so
 * whoever edits a body deliberately can write the matching fingerprint (and seal) too — as they
 * could add a row of their own. This catches damage and careless edits, not forgery by someone
 * who may write the journal file.
 *
 * @module
 * @internal
 */
import { isCredentialName } from '../credentials.js';
import { fingerprintInput, type FingerprintDigest } from '../fingerprint.js';
import { NEVER_JOURNALED_HEADERS, scopeOrigin, type OperationRecord } from './types.js';

/**
 * The bytes a journaled request's fingerprint is computed over: its method, path and query, and
 * its body canonicalised by the journaled `content-type`. One definition for the client that
 * writes a record and the check that reads it back.
 *
 * @example
 * ```ts
 * const input = journaledFingerprintInput('POST', new URL('https://api.example.com/v1/pay'), { 'content-type': 'application/json' }, '{"amount":500}');
 * ```
 */
export function journaledFingerprintInput(method: string, url: URL, headers: Readonly<Record<string, string>>, body: string | null): Uint8Array<ArrayBuffer> {
  // Without a content-type, fetch sends a string body as text/plain: fingerprint it as the server will.
  const contentType = headers['content-type'] ?? 'text/plain;charset=UTF-8';
  return fingerprintInput(method, url.pathname + url.search, body, { contentType });
}

/**
 * Why journaled `headers` must not be sent, or `undefined`: a credential, which would stand in for
 * the resuming client's own. Also what a journal names a changed row by when its headers say it.
 *
 * @example
 * ```ts
 * journaledHeaderDamage({ authorization: 'Bearer x' }); // 'its headers hold authorization, which is never journaled'
 * ```
 */
export function journaledHeaderDamage(headers: Readonly<Record<string, string>>): string | undefined {
  const secret = Object.keys(headers).find((name) => NEVER_JOURNALED_HEADERS.has(name.toLowerCase()) || isCredentialName(name));
  return secret === undefined ? undefined : `its headers hold ${secret}, which is never journaled`;
}

/**
 * Why `record` must not be sent, or `undefined` when it is what its fingerprint says and it stays
 * in the origin of `scope` (its own, unless the caller knows better).
 *
 * @example
 * ```ts
 * const reason = await recordDamage(record, nodeDigest);
 * if (reason !== undefined) console.warn(`${record.key} is damaged: ${reason}`);
 * ```
 */
export async function recordDamage(record: OperationRecord, digest: FingerprintDigest, scope: string = record.scope): Promise<string | undefined> {
  if (!URL.canParse(record.url)) return 'its URL does not parse';
  const url = new URL(record.url);
  const origin = scopeOrigin(scope);
  if (url.origin !== origin) return `its URL is on ${url.origin}, outside its scope's origin ${origin}`;
  if (record.body !== null && typeof record.body !== 'string') return 'its body is not text';
  // The client writes methods upper-case; fetch upper-cases only some, so another case would
  // send another method than the one fingerprinted (which upper-cases it).
  if (record.method !== record.method.toUpperCase()) return `its method ${JSON.stringify(record.method)} is not upper-case`;
  const secret = journaledHeaderDamage(record.headers);
  if (secret !== undefined) return secret;
  const expected = await digest(journaledFingerprintInput(record.method, url, record.headers, record.body));
  if (expected !== record.fingerprint) return 'its method, URL or body no longer match its fingerprint';
  return undefined;
}

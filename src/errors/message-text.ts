/**
 * The parts of error messages that come from outside this process: a server's problem details
 * (RFC 9457) and a network error's cause. Both are cleaned and capped before they go into a
 * message, so a hostile or broken server cannot flood a log line or forge new ones.
 *
 * @module
 */

/** At most this many characters of foreign text go into one message. */
const MAX_MESSAGE_TEXT = 300;
/** Causes nest (undici wraps the socket's error); a cyclic or absurd chain stops here. */
const MAX_CAUSE_DEPTH = 5;
/**
 * Control characters and line or paragraph separators: a newline or an ANSI escape in a
 * server's text would start a fake log line or repaint a terminal.
 */
const BREAKING = /[\p{Cc}\p{Zl}\p{Zp}]+/gu;
/** Bidirectional overrides and marks ("Trojan Source"): they reorder how the rest of the line reads. */
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * The RFC 9457 members oncely reads from a problem+json body. A member is `undefined` when it
 * is absent or not a string (RFC 9457 §3.1: a member of the wrong type is ignored).
 *
 * @internal
 */
export interface ProblemDetails {
  readonly type: string | undefined;
  readonly title: string | undefined;
  readonly detail: string | undefined;
}

const stringMember = (object: object, name: string): string | undefined => {
  const value: unknown = (object as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * Reads `type`, `title` and `detail` from a response body. Returns `undefined` when the body is
 * not a JSON object (HTML, text, an array, a body cut to the journal's cap). The content type
 * is not checked: servers often send problem documents as plain `application/json`.
 *
 * @internal
 */
export function parseProblem(body: string): ProblemDetails | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  return { type: stringMember(parsed, 'type'), title: stringMember(parsed, 'title'), detail: stringMember(parsed, 'detail') };
}

/**
 * `text` made fit for a one-line message: control characters and line breaks become a space,
 * bidirectional controls are dropped, whitespace runs collapse, and the result is cut to 300
 * characters (code points) with a trailing `…`.
 *
 * @internal
 */
export function messageText(text: string): string {
  // Only the head can end up in the message; cleaning a 64 KiB detail whole would be wasted work.
  const head = text.slice(0, MAX_MESSAGE_TEXT * 8);
  const clean = head.replace(BREAKING, ' ').replace(BIDI, '').replace(/\s+/g, ' ').trim();
  const chars = Array.from(clean);
  if (chars.length <= MAX_MESSAGE_TEXT && head.length === text.length) return clean;
  // The cut may have split a surrogate pair; a lone half would print as a replacement glyph.
  const kept = chars
    .slice(0, MAX_MESSAGE_TEXT)
    .join('')
    .replace(/[\uD800-\uDBFF]$/, '')
    .trimEnd();
  return `${kept}…`;
}

function describeOne(error: Error): string {
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  const message = error.message === '' ? error.name : error.message;
  return code === undefined || message.includes(code) ? message : `${code}: ${message}`;
}

function describe(error: unknown, depth: number): string {
  if (!(error instanceof Error)) return String(error);
  // Node tries every address of a host (IPv6 and IPv4) and rejects with an AggregateError of
  // one error per address; its own message is empty.
  if (error instanceof AggregateError && error.errors.length > 0 && depth < MAX_CAUSE_DEPTH) {
    return [...new Set(error.errors.map((each: unknown) => describe(each, depth + 1)))].join('; ');
  }
  // undici's fetch rejects with `TypeError: fetch failed` and keeps what happened (the
  // ECONNREFUSED, the reset socket) in `cause`, sometimes a level or two down.
  if (error.cause !== undefined && depth < MAX_CAUSE_DEPTH) return describe(error.cause, depth + 1);
  return describeOne(error);
}

/**
 * What went wrong, in one cleaned and capped line: the innermost cause of `error` (`connect
 * ECONNREFUSED 127.0.0.1:9` rather than `fetch failed`), with its `code` when the message does
 * not already name it.
 *
 * @internal
 */
export function describeCause(error: unknown): string {
  try {
    return messageText(describe(error, 0));
  } catch {
    // A thrown value whose message or String() throws: the message must still be built.
    return 'an error that cannot be described';
  }
}

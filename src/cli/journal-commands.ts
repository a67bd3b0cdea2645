/**
 * `oncely pending` and `oncely resume`: look into a journal and finish what a crashed process
 * left behind.
 *
 * `pending` only reads the journal (no network, no credentials): one scope's operations with
 * `--url` (and `--scope`), every scope's, grouped, without. `resume` sends the submitted pending
 * operations of one scope (`--url` is required: a token is only ever sent to its own server)
 * again with their journaled key and bytes, with the token given now: credentials are never
 * journaled.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { createClient, type Client } from '../client/create-client.js';
import { nodeDigest } from '../digest.node.js';
import { defaultJournalPath } from '../journal/default.node.js';
import { recordDamage } from '../journal/integrity.js';
import { sqliteJournal } from '../journal/sqlite.node.js';
import { OperationState, SCOPE_NAME, isExpired, scopeOf, type DamagedRecord, type OperationRecord } from '../journal/types.js';
import { parseCommandArgs, readDuration, reportParseFailure, tokenProblem, usageError, type ReadResult } from './args.js';
import { onInterrupt } from './interrupt.js';
import { printResumed } from './resume-report.js';

const journalOption = { type: 'string', value: 'PATH', help: 'the journal file (default: $ONCELY_JOURNAL, else ~/.oncely/journal.db)' } as const;
const jsonOption = { type: 'boolean', help: 'print JSON instead of a table' } as const;
const ttlOption = {
  type: 'string',
  value: 'DURATION',
  help: "the server's key retention, e.g. 24h or 7d (a bare number is hours); older pending operations are expired (default 24h)",
} as const;
const urlOption = { type: 'string', value: 'URL', help: "the server (its origin is the scope's; a path is ignored)" } as const;
const scopeOption = { type: 'string', value: 'NAME', help: 'the scope name the client was given (createClient({ scope }))' } as const;

const pendingSpec = {
  name: 'pending',
  description:
    'List the operations of a journal that have no final outcome yet: key, state, age, attempts and last status. ' +
    "With --url (and --scope), that scope's only; without, every scope's, grouped. Rows that cannot be read are listed as damaged.",
  options: { journal: journalOption, url: urlOption, scope: scopeOption, 'key-ttl': ttlOption, json: jsonOption },
} as const;

const resumeSpec = {
  name: 'resume',
  description:
    'Send the pending operations of one scope that were submitted (not those only prepared) again, with their journaled key and body, until they settle. ' +
    'Operations older than the key retention are reported, never resent.',
  options: {
    journal: journalOption,
    url: { ...urlOption, help: 'the server whose operations to resume (required: the token goes to this origin only)' },
    scope: scopeOption,
    token: { type: 'string', value: 'TOKEN', help: 'bearer token, never journaled (default: $ONCELY_TOKEN, which is safer: other users can see a flag in ps)' },
    'key-ttl': ttlOption,
    json: jsonOption,
  },
} as const;

/** One line of `oncely pending`. */
interface PendingRow {
  readonly scope: string;
  readonly key: string;
  readonly state: 'pending' | 'expired';
  readonly ageMs: number;
  readonly attempts: number;
  readonly lastStatus: number | null;
  readonly method: string;
  readonly url: string;
}

/**
 * Formats an age in milliseconds the way people read it: `42s`, `3m05s`, `2h07m`, `3d04h`.
 *
 * @example
 * ```ts
 * formatAge(185_000); // '3m05s'
 * ```
 */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

function toRow(record: OperationRecord, keyTtlMs: number, now: number): PendingRow {
  return {
    scope: record.scope,
    key: record.key,
    state: isExpired(record, keyTtlMs, now) ? 'expired' : 'pending',
    ageMs: now - record.createdAt,
    attempts: record.attempts,
    lastStatus: record.lastStatus,
    method: record.method,
    url: record.url,
  };
}

function table(rows: readonly PendingRow[]): string {
  const header = ['KEY', 'STATE', 'AGE', 'ATTEMPTS', 'LAST', 'REQUEST'];
  const cells = rows.map((row) => [
    row.key,
    row.state,
    formatAge(row.ageMs),
    String(row.attempts),
    row.lastStatus === null ? '-' : String(row.lastStatus),
    `${row.method} ${row.url}`,
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...cells.map((cell) => (cell[i] ?? '').length)));
  const render = (cell: readonly string[]): string => cell.map((text, i) => (i === cell.length - 1 ? text : text.padEnd(widths[i] ?? 0))).join('  ');
  return [render(header), ...cells.map(render)].join('\n');
}

/** The scope named by `--url` and `--scope`, `undefined` without `--url`, or a usage problem. */
function readScope(url: string | undefined, name: string | undefined): { ok: true; value: string | undefined } | { ok: false; problem: string } {
  if (url === undefined) return name === undefined ? { ok: true, value: undefined } : { ok: false, problem: '--scope needs --url' };
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) return { ok: false, problem: `--url ${JSON.stringify(url)} is not an http(s) URL` };
  if (name !== undefined && !SCOPE_NAME.test(name))
    return { ok: false, problem: `--scope ${JSON.stringify(name)} must be 1–64 characters from A-Z a-z 0-9 . _ ~ -` };
  return { ok: true, value: scopeOf(url, name) };
}

function damagedTable(rows: readonly DamagedRecord[]): string {
  return rows.map((row) => `${row.key}  damaged  ${row.reason}`).join('\n');
}

/** `--key-ttl` in the syntax `serve` reads too, plus the bare hours these commands took before. */
function readTtl(raw: string | undefined): ReadResult<number> {
  const ttl = readDuration('key-ttl', raw, { fallback: '24h', bareHours: true });
  // A zero retention would call every operation expired; 365d is the ceiling HOURS had (8760).
  if (ttl.ok && (ttl.value <= 0 || ttl.value > 365 * 86_400_000)) {
    return { ok: false, problem: `--key-ttl must be more than 0 and at most 365d, got ${JSON.stringify(raw)}` };
  }
  return ttl;
}

/**
 * Whether the journal at `path` exists, telling the user (exit code 1) when it does not. Never
 * opened when missing: opening a journal creates it, and a mistyped path must neither leave an
 * empty journal behind nor read as "nothing pending".
 */
function journalExists(command: 'pending' | 'resume', path: string): boolean {
  if (existsSync(path)) return true;
  console.error(`oncely ${command}: no journal at ${path}`);
  return false;
}

/**
 * `oncely pending [--journal PATH] [--url URL [--scope NAME]] [--key-ttl DURATION] [--json]`:
 * lists unsettled operations (and damaged rows), of one scope or of all, grouped by scope. Exit
 * code 0 (also when there are none), 1 when there is no journal at the path, 2 for a usage error.
 *
 * @example
 * ```ts
 * process.exitCode = await pending(['--journal', './jobs.db']);
 * ```
 */
export async function pending(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(argv, pendingSpec);
  if (!parsed.ok) return reportParseFailure(parsed);
  const ttl = readTtl(parsed.values['key-ttl']);
  if (!ttl.ok) return reportParseFailure(usageError(pendingSpec, ttl.problem));
  const scope = readScope(parsed.values.url, parsed.values.scope);
  if (!scope.ok) return reportParseFailure(usageError(pendingSpec, scope.problem));
  const path = defaultJournalPath({ path: parsed.values.journal });
  if (!journalExists('pending', path)) return 1;
  const journal = sqliteJournal({ path });
  try {
    const now = Date.now();
    const filter = scope.value === undefined ? {} : { scope: scope.value };
    // The check resume() makes before sending (../journal/integrity.ts): a row it would refuse is listed as damaged.
    const listed = await journal.list({ ...filter, state: OperationState.Pending });
    const reasons = await Promise.all(listed.map((record) => recordDamage(record, nodeDigest)));
    const rows = listed.filter((_, i) => reasons[i] === undefined).map((record) => toRow(record, ttl.value, now));
    const refused = listed.flatMap((record, i) => (reasons[i] === undefined ? [] : [{ scope: record.scope, key: record.key, reason: reasons[i] as string }]));
    const damaged = [...refused, ...(await journal.damaged(filter))];
    if (parsed.values.json === true) {
      console.log(JSON.stringify([...rows, ...damaged.map((row) => ({ ...row, state: 'damaged' }))], null, 2));
      return 0;
    }
    if (rows.length === 0 && damaged.length === 0) {
      console.log(`no pending operations${scope.value === undefined ? '' : ` of ${scope.value}`} in ${journal.path}`);
      return 0;
    }
    const scopes = [...new Set([...rows.map((row) => row.scope), ...damaged.map((row) => row.scope ?? '(unknown scope)')])];
    for (const [i, name] of scopes.entries()) {
      const mine = rows.filter((row) => row.scope === name);
      const broken = damaged.filter((row) => (row.scope ?? '(unknown scope)') === name);
      console.log(`${i === 0 ? '' : '\n'}${name}`);
      if (mine.length > 0) console.log(table(mine));
      if (broken.length > 0) console.log(damagedTable(broken));
    }
    const expired = rows.filter((row) => row.state === 'expired').length;
    console.log(
      `\n${rows.length} pending operation${rows.length === 1 ? '' : 's'} in ${journal.path}` +
        (scopes.length > 1 ? ` (${scopes.length} scopes)` : '') +
        (expired > 0 ? `; ${expired} expired: reconcile them, \`oncely resume\` will not resend them` : '') +
        (damaged.length > 0 ? `; ${damaged.length} damaged row${damaged.length === 1 ? '' : 's'}, left as they are` : ''),
    );
    return 0;
  } finally {
    await journal.close();
  }
}

/**
 * `oncely resume --url URL [--scope NAME] [--journal PATH] [--token TOKEN] [--json]`: sends the
 * scope's submitted pending operations again. Exit code 0 when every one of them settled
 * (succeeded or failed), 1 when some are still pending (a `401` included: rerun with a valid
 * token), expired, damaged or held by another live process, or when there is no journal at the
 * path; 2 for a usage error; 130 when Ctrl-C stopped it (what was in flight stays pending; a
 * second Ctrl-C leaves once the outcomes already received are written).
 *
 * @example
 * ```ts
 * process.exitCode = await resume(['--journal', './jobs.db', '--token', 'test_acme']);
 * ```
 */
export async function resume(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs(argv, resumeSpec);
  if (!parsed.ok) return reportParseFailure(parsed);
  const ttl = readTtl(parsed.values['key-ttl']);
  if (!ttl.ok) return reportParseFailure(usageError(resumeSpec, ttl.problem));
  if (parsed.values.url === undefined) {
    return reportParseFailure(
      usageError(
        resumeSpec,
        '--url is required: operations are resumed per server, and the token is sent to that origin only (`oncely pending` lists the scopes)',
      ),
    );
  }
  const scope = readScope(parsed.values.url, parsed.values.scope);
  if (!scope.ok) return reportParseFailure(usageError(resumeSpec, scope.problem));
  const token = parsed.values.token ?? process.env['ONCELY_TOKEN'];
  // Without credentials every resend would only be refused (401). A 401 leaves the operation
  // pending, so trying costs nothing lasting, but it is a request per operation for nothing.
  if (token === undefined || token === '') return reportParseFailure(usageError(resumeSpec, '--token (or $ONCELY_TOKEN) is required'));
  const unsendable = tokenProblem(token);
  if (unsendable !== undefined) return reportParseFailure(usageError(resumeSpec, unsendable));
  const path = defaultJournalPath({ path: parsed.values.journal });
  if (!journalExists('resume', path)) return 1;
  const journal = sqliteJournal({ path });
  const abort = new AbortController();
  let client: Client | undefined;
  let stopListening = (): void => undefined;
  try {
    client = createClient({
      baseUrl: parsed.values.url,
      ...(parsed.values.scope === undefined ? {} : { scope: parsed.values.scope }),
      headers: { authorization: `Bearer ${token}` },
      journal,
      keyTtlMs: ttl.value,
      signal: abort.signal,
    });
    const opened = client;
    // Ctrl-C stops sending (what is in flight stays pending) and reports; a second one leaves
    // once the outcomes already received are written (interrupt.ts).
    stopListening = onInterrupt({
      stop: () => abort.abort(new Error('interrupted (Ctrl-C)')),
      flush: () => opened.close().finally(() => journal.close()),
    });
    const outcomes = await client.resume();
    if (outcomes.length === 0) {
      if (parsed.values.json === true) console.log('[]');
      else console.log(`nothing to resume for ${client.scope} in ${journal.path}`);
      return 0;
    }
    const unsettled = printResumed(outcomes, parsed.values.json === true);
    if (abort.signal.aborted) return 130;
    return unsettled === 0 ? 0 : 1;
  } finally {
    stopListening();
    await (client?.close() ?? Promise.resolve()).finally(() => journal.close());
  }
}

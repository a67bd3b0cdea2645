/**
 * The history checker, in the manner of Jepsen: what every client was told, set against what the
 * surviving primary holds at the end. Pure: it reads a {@link History} and returns a
 * {@link Verdict}; the run collects the history (`workload.ts`, `server-state.ts`).
 *
 * | property | violated when | counted as |
 * |---|---|---|
 * | an acknowledged operation exists | a key some client got a `2xx` for has no finished record, no effect, or a stored response none of its clients got | `lost` |
 * | exactly once | a key has two effects (payment rows or ledger entries), or clients got two different `2xx` bodies for it (the late retry included) | `duplicated` |
 * | the response the client got | the record holds one of the `2xx` bodies its clients got, and another client was told a different one | `wrongAnswers` |
 * | never half done | a key's record is still `started`; finished with `2xx` but without its payment and ledger entry; absent but with an effect | `halfDone` |
 * | journals agree | a journal settled as succeeded/failed with a status or body the server does not hold | `journalDisagrees` |
 *
 * An operation never acknowledged may be absent or complete: both are fine (`unacknowledged`
 * counts them). A key may be reported under several properties; each list names the keys.
 *
 * @module
 */

/** One HTTP attempt as a client saw it. */
export interface Attempt {
  readonly key: string;
  /** Which instance it went to (e.g. `serve-0`). */
  readonly target: string;
  readonly startedAt: number;
  readonly endedAt: number;
  /** The HTTP status, absent when no response arrived (`error` says why). */
  readonly status?: number;
  /** A digest of the response body's bytes. */
  readonly digest?: string;
  readonly error?: string;
  /** Sent by the late retry after the load (a caller that never heard its answer), not by the operation's own clients. */
  readonly late?: boolean;
}

/** One logical operation: its key was minted before its first attempt. */
export interface Operation {
  readonly key: string;
  /** Which application it belongs to (`serve` or `express`): keys are checked within it. */
  readonly app: string;
}

/** What the surviving primary holds for one key at the end. */
export interface ServerRecord {
  readonly key: string;
  readonly record: 'absent' | 'started' | 'finished';
  /** The stored response's status and body digest, for a finished record. */
  readonly status?: number;
  readonly digest?: string;
  /** Payment rows for the key. */
  readonly effects: number;
  /** Ledger entries for the key. */
  readonly ledger: number;
}

/** One client journal's row for a key, after the last `resume()`. */
export interface JournalEntry {
  readonly key: string;
  readonly journal: string;
  /** `succeeded`, `failed`, or still `pending` / `sending` / …. */
  readonly state: string;
  readonly status?: number;
  readonly digest?: string;
}

export interface History {
  readonly operations: readonly Operation[];
  readonly attempts: readonly Attempt[];
  /** One record per operation's key; a key with no record here counts as absent with no effect. */
  readonly server: readonly ServerRecord[];
  readonly journals: readonly JournalEntry[];
}

/** A broken property, with the key and what was seen. */
export interface Violation {
  readonly property: 'lost' | 'duplicated' | 'wrongAnswers' | 'halfDone' | 'journalDisagrees';
  readonly key: string;
  readonly detail: string;
}

export interface Verdict {
  readonly operations: number;
  /** Keys some client got a `2xx` for. */
  readonly acknowledged: number;
  /** Keys never acknowledged, found absent or complete (both allowed). */
  readonly unacknowledged: { readonly absent: number; readonly complete: number };
  /** Journal rows not settled at the end (the client could not finish them). */
  readonly unsettled: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly wrongAnswers: number;
  readonly halfDone: number;
  readonly journalDisagrees: number;
  readonly violations: readonly Violation[];
}

const ABSENT = (key: string): ServerRecord => ({ key, record: 'absent', effects: 0, ledger: 0 });
const ok = (status: number | undefined): boolean => status !== undefined && status >= 200 && status < 300;

/**
 * Checks a history.
 *
 * @example
 * ```ts
 * const verdict = checkHistory({ operations, attempts, server, journals });
 * if (verdict.violations.length > 0) console.error(verdict.violations);
 * ```
 */
export function checkHistory(history: History): Verdict {
  const server = new Map(history.server.map((record) => [record.key, record]));
  const acks = new Map<string, Attempt[]>();
  for (const attempt of history.attempts) {
    if (ok(attempt.status)) acks.set(attempt.key, [...(acks.get(attempt.key) ?? []), attempt]);
  }
  const toldBeforeLate = (key: string): Attempt[] => (acks.get(key) ?? []).filter((attempt) => !attempt.late);
  const violations: Violation[] = [];
  const unacknowledged = { absent: 0, complete: 0 };
  for (const op of history.operations) {
    const record = server.get(op.key) ?? ABSENT(op.key);
    const told = toldBeforeLate(op.key);
    violations.push(...checkKey(record, told, acks.get(op.key) ?? []));
    if (told.length === 0 && !violations.some((v) => v.key === op.key)) {
      unacknowledged[record.record === 'absent' ? 'absent' : 'complete'] += 1;
    }
  }
  violations.push(...checkJournals(history.journals, server));
  const count = (property: Violation['property']): number => new Set(violations.filter((v) => v.property === property).map((v) => v.key)).size;
  return {
    operations: history.operations.length,
    acknowledged: history.operations.filter((op) => toldBeforeLate(op.key).length > 0).length,
    unacknowledged,
    unsettled: history.journals.filter((entry) => entry.state !== 'succeeded' && entry.state !== 'failed').length,
    lost: count('lost'),
    duplicated: count('duplicated'),
    wrongAnswers: count('wrongAnswers'),
    halfDone: count('halfDone'),
    journalDisagrees: count('journalDisagrees'),
    violations,
  };
}

/**
 * The properties of one key: its record and effects against the `2xx` answers its own clients got
 * (`told`) and every `2xx` answer, the late retry's included (`all`).
 */
function checkKey(record: ServerRecord, told: readonly Attempt[], all: readonly Attempt[]): Violation[] {
  const { key } = record;
  const found: Violation[] = [];
  const say = (property: Violation['property'], detail: string): void => void found.push({ property, key, detail });
  if (record.effects > 1 || record.ledger > 1) say('duplicated', `${record.effects} payment rows, ${record.ledger} ledger entries`);
  const bodies = new Set(all.map((attempt) => attempt.digest));
  if (bodies.size > 1) say('duplicated', `clients were told ${bodies.size} different 2xx bodies: ${[...bodies].join(', ')}`);
  const holds = (attempt: Attempt): boolean => attempt.status === record.status && attempt.digest === record.digest;
  if (told.length > 0) {
    if (record.record !== 'finished') say('lost', `acknowledged ${told.length}× (first by ${told[0]!.target}), record ${record.record}`);
    else if (record.effects === 0) say('lost', `acknowledged, record finished, no payment row`);
    else if (!told.some(holds))
      say('lost', `acknowledged ${told[0]!.status} ${told[0]!.digest}, the server holds ${record.status} ${record.digest} (run again since)`);
    else {
      for (const attempt of all.filter((a) => !holds(a))) {
        say('wrongAnswers', `${attempt.target} was told ${attempt.status} ${attempt.digest}, the server holds ${record.status} ${record.digest}`);
      }
    }
  }
  if (record.record === 'started') say('halfDone', 'record still started at the end');
  if (record.record === 'absent' && (record.effects > 0 || record.ledger > 0))
    say('halfDone', `no record, ${record.effects} payments, ${record.ledger} ledger entries`);
  if (record.record === 'finished' && ok(record.status) && (record.effects !== 1 || record.ledger !== 1) && record.effects <= 1 && record.ledger <= 1) {
    say('halfDone', `finished ${record.status} with ${record.effects} payments, ${record.ledger} ledger entries`);
  }
  return found;
}

/** A journal settled with a result must hold what the server holds. */
function checkJournals(journals: readonly JournalEntry[], server: ReadonlyMap<string, ServerRecord>): Violation[] {
  const found: Violation[] = [];
  for (const entry of journals) {
    if (entry.state !== 'succeeded' && entry.state !== 'failed') continue;
    const record = server.get(entry.key) ?? ABSENT(entry.key);
    if (record.record !== 'finished' || record.status !== entry.status || (ok(entry.status) && record.digest !== entry.digest)) {
      found.push({
        property: 'journalDisagrees',
        key: entry.key,
        detail: `journal ${entry.journal} says ${entry.state} ${entry.status} ${entry.digest}, the server holds ${record.record} ${record.status} ${record.digest}`,
      });
    }
  }
  return found;
}

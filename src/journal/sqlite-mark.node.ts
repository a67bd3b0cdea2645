/**
 * The SQLite journal's high-water mark: how many operations the journal has written, kept where
 * damage to the write-ahead log cannot hide it, so that operations lost with the WAL are noticed
 * when the file is opened instead of silently missing.
 *
 * Why it is needed: a commit lives in the `-wal` file until a checkpoint copies it into the main
 * file. When a frame in the middle of the WAL is damaged (a disk error, a partial copy, an
 * editor), SQLite's recovery stops at it without an error and every later commit is gone:
 * `pending()` showed 1 of 20 operations and nothing else. Rows cannot tell that rows are
 * missing; a count kept with them is lost with them. So the count lives in two places:
 *
 * | where                                   | written                          | after WAL damage        |
 * | --------------------------------------- | -------------------------------- | ----------------------- |
 * | `oncely_meta.operations_written`        | in the transaction of each `put` | what recovery kept      |
 * | `<journal>-mark` (this file, separate)  | after that transaction committed | the last count written  |
 *
 * On open the mark is read first, then the counter: since the mark is only ever written with a
 * count already committed, and the counter only grows, a healthy journal always has
 * `mark <= counter` (also with several processes: a late writer may put back a smaller count,
 * never a larger one). `mark > counter` means `mark - counter` operations were committed and are
 * no longer in the file: the open fails with a `JournalError` saying so, every time, until
 * someone who has reconciled them deletes the mark file. Before failing, the `-wal` as found is
 * copied aside (`<journal>-wal.lost-<time>`): closing the connection would otherwise checkpoint
 * what recovery kept and delete the WAL, with the frames after the damage.
 *
 * Limits, on purpose:
 * - Only lost `put`s are counted. A lost update (an attempt count, a settled state) is not: a
 *   settled operation read back as pending is resent under its key and answered from the
 *   server's record.
 * - The mark is written, never fsynced: an fsync of its own would double the cost of a
 *   `durability: 'power'` put (measured 8 → 17.5 ms per put and settle on this project's test
 *   machine). After a power loss or an OS crash it can only be behind what was committed, so it
 *   never reports a loss that did not happen; it may miss a WAL damaged in that same crash. With
 *   `'process'` a power loss that takes the WAL's last commits and spares the mark is reported:
 *   those operations were lost.
 * - A process killed between a commit and its mark write leaves the mark behind by that
 *   commit's operations: those are not noticed if the WAL is damaged before the next write.
 * - A mark that is missing, unreadable or of another journal (the file was replaced: the
 *   journal's id differs) is written afresh: deleting the mark hides a loss, as it is meant to
 *   when acknowledging one. The counter table is created in the file's first transaction, before
 *   the file is switched to WAL, so a new journal's id is in the main file from the start; in a
 *   journal written by an older oncely it is created in the WAL, and a loss of that very frame
 *   goes unnoticed.
 * - Damage to the main file itself is `quick_check`'s to find (see `verifyOnOpen`).
 *
 * @module
 * @internal
 */
import { closeSync, constants, copyFileSync, ftruncateSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import type { SqliteDatabase } from '../sqlite/driver.node.js';
import { JournalError } from '../errors.js';

/** The mark file of the journal at `path`. */
export const markPath = (path: string): string => `${path}-mark`;

const FORMAT = /^oncely-journal-mark 1 ([0-9a-f-]{36}) (\d{16})\n$/;

const render = (journalId: string, written: number): Buffer => Buffer.from(`oncely-journal-mark 1 ${journalId} ${String(written).padStart(16, '0')}\n`);

/** What the file holds: the journal's id and the count, each written with the same length, at offset 0. */
function readMark(file: string): { readonly journalId: string; readonly written: number } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
  const match = FORMAT.exec(text);
  return match ? { journalId: match[1] as string, written: Number(match[2]) } : undefined;
}

/** The mark of one open journal: advanced after each commit that wrote operations. */
export interface WriteMark {
  /** Records that `written` operations are committed (a count from `oncely_meta`, read in that commit). */
  advance(written: number): void;
  close(): void;
}

/**
 * Compares the mark with the counter of the freshly opened `db` and opens the mark for writing.
 * Throws a `JournalError` naming how many operations are unaccounted for when the file holds
 * fewer than the mark says were committed.
 */
export function openMark(db: SqliteDatabase, path: string): WriteMark {
  const file = markPath(path);
  // The mark first, then the counter: see the module comment for why this order never misreads.
  const mark = readMark(file);
  const meta = db.prepare<[], { journal_id: string; operations_written: number }>('SELECT journal_id, operations_written FROM oncely_meta').get();
  if (meta === undefined) throw new Error('oncely_meta has no row');
  if (mark !== undefined && mark.journalId === meta.journal_id && mark.written > meta.operations_written) {
    throw lossError(path, mark.written - meta.operations_written, mark.written);
  }
  // Never truncated while in use (another process may be reading it): every write has the same
  // length, at offset 0. Only an unreadable mark is cleared first, so no stale tail stays behind.
  const fd = openSync(file, constants.O_RDWR | constants.O_CREAT, 0o600);
  if (mark === undefined) ftruncateSync(fd, 0);
  let highest = -1;
  let open = true;
  const advance = (written: number): void => {
    if (!open || written <= highest) return;
    highest = written;
    try {
      writeSync(fd, render(meta.journal_id, written), 0, undefined, 0);
    } catch {
      // The operations are committed: failing their put now would misreport them. A mark left
      // behind is never mistaken for a loss; it only stops seeing these operations.
    }
  };
  advance(Math.max(meta.operations_written, mark?.journalId === meta.journal_id ? mark.written : 0));
  return {
    advance,
    close: () => {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

function lossError(path: string, lost: number, written: number): JournalError {
  const wal = `${path}-wal`;
  let kept = '';
  try {
    if (statSync(wal).size > 0) {
      const copy = `${wal}.lost-${Date.now()}`;
      copyFileSync(wal, copy);
      kept = ` The -wal file as found is kept at ${copy} (SQLite stopped reading it at the damage; what follows may still be read by hand).`;
    }
  } catch {
    // No WAL left (an earlier open already reported this loss): nothing to keep.
  }
  return new JournalError(
    `${lost} of the ${written} operations this journal recorded as written ${lost === 1 ? 'is' : 'are'} no longer in it: its write-ahead log (-wal) was damaged or cut short, and SQLite's recovery stopped before ${lost === 1 ? 'it' : 'them'}`,
    {
      path,
      hint:
        `their keys and bodies are gone from the file and they may have been sent: check with the server which of them took effect.${kept} ` +
        `To go on with what the file still holds, delete ${markPath(path)}; oncely never resets or deletes the journal itself`,
    },
  );
}

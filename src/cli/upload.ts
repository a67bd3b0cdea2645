/**
 * `oncely upload FILE.csv`: one idempotent POST per row, keyed by the row's natural reference,
 * resumable after a crash or Ctrl-C by running the same command again.
 *
 * ```
 * pass 1  read the whole file: UTF-8? header? how many rows?   ── a bad file stops here, nothing sent
 * pass 2  read again, BATCH_SIZE (500) rows at a time:
 *           map rows → invalid (reported with line) | {key, body}
 *           journal.putMany(batch)  ── durable before any of them is sent
 *           already settled in the journal → counted, not resent
 *           otherwise → send through the client (≤ --concurrency at once; reading waits for a slot)
 * ```
 *
 * Memory stays flat: only the current batch and the requests in flight are held.
 *
 * @module
 */
import { writeFile } from 'node:fs/promises';
import { createClient } from '../client/create-client.js';
import { isOncelyError } from '../errors.js';
import { sqliteJournal } from '../journal/sqlite.node.js';
import { OperationState, type NewOperation } from '../journal/types.js';
import { deriveKey } from '../keys.js';
import { reportParseFailure } from './args.js';
import { onInterrupt } from './interrupt.js';
import { inspectFile, rowFingerprint, validBatches } from './upload-file.js';
import { createProgress, type Progress } from './upload-progress.js';
import { createTally, renderReport, succeeded, type Tally, type UploadReport } from './upload-report.js';
import type { RowUpload } from './upload-rows.js';
import { resolveSettings, type UploadSettings } from './upload-settings.js';

/**
 * `oncely upload FILE.csv --url URL --token TOKEN [...]`. Exit codes: 0 every valid row has a
 * final outcome (a dry run: the file would be sent); 1 some rows are still pending (the server
 * settled nothing for a long run of rows, or the journal failed), or the file cannot be read
 * (nothing sent), or no row of it is valid (with `--strict`: some row is not); 2 usage error; 130
 * stopped by Ctrl-C. In every case but a usage error, running it again resumes.
 *
 * @example
 * ```ts
 * process.exitCode = await upload(['payroll.csv', '--url', 'http://127.0.0.1:8787/v1/payments', '--token', 'test_acme']);
 * ```
 */
export async function upload(argv: readonly string[]): Promise<number> {
  const resolved = resolveSettings(argv);
  if (!resolved.ok) return reportParseFailure(resolved);
  const { settings } = resolved;
  const started = Date.now();

  const inspected = await inspectFile(settings);
  if ('problem' in inspected) {
    console.error(`oncely upload: ${settings.file}: ${inspected.problem}\nnothing was sent.`);
    return 1;
  }
  const tally = createTally();
  const progress = createProgress({ total: inspected.rows, stream: process.stderr, unit: 'rows' });
  const run: RunState = { stopReason: undefined, sent: 0, unsent: 0 };
  const finish = async (): Promise<number> => {
    const report: UploadReport = tally.report({
      file: settings.file,
      url: settings.dryRun ? null : (settings.url ?? null),
      dryRun: settings.dryRun,
      strict: settings.strict,
      interrupted: run.stopReason !== undefined,
      stopReason: run.stopReason ?? null,
      rows: inspected.rows,
      sent: run.sent,
      unsent: run.unsent,
      elapsedMs: Date.now() - started,
    });
    console.log(renderReport(report));
    if (settings.reportPath !== undefined) await writeFile(settings.reportPath, `${JSON.stringify(report, null, 2)}\n`);
    if (run.stopReason === 'interrupted') return 130;
    return succeeded(report) ? 0 : 1;
  };

  if (settings.dryRun) {
    // Reading every batch derives every key and records the invalid rows; nothing is kept.
    let read = 0;
    for await (const batch of validBatches(settings, tally, () => false, inspected.duplicates)) {
      read += batch.length;
      progress.update(read + tally.counts.invalid, tally.counts);
    }
    progress.finish(read + tally.counts.invalid, tally.counts);
    return finish();
  }
  await send(settings, tally, progress, run, inspected.duplicates);
  return finish();
}

/** Why a run stopped before every row was sent. */
type StopReason = 'interrupted' | 'unreachable' | 'journal' | 'unauthorized';

/** What a run did besides the tally: why it stopped, and the rows it sent or left unsent. */
interface RunState {
  stopReason: StopReason | undefined;
  /** Rows sent and seen to an answer or to the end of their retries (the rate counts these). */
  sent: number;
  /** Rows journaled but never sent: the run stopped before their turn. */
  unsent: number;
}

/** What a row cut off in flight by a stop is listed with: why, and what that means for it. */
const CUT_OFF: Record<StopReason, string> = {
  interrupted: 'stopped by Ctrl-C before its answer: it may have run; run the same command again to find out',
  unauthorized: 'not run: the server refused the token, and runs nothing sent with it; run again with the right --token',
  unreachable: 'stopped before its answer: the server settled nothing for many rows in a row; run the same command again',
  journal: 'stopped before its answer: the journal failed; run the same command again once it is writable',
};

/** Pass 2 for real: journal in batches, send with bounded concurrency, stop cleanly on SIGINT. */
async function send(settings: UploadSettings, tally: Tally, progress: Progress, run: RunState, duplicates: ReadonlyMap<number, string>): Promise<void> {
  const target = new URL(settings.url as string);
  const path = target.pathname + target.search;
  const journal = sqliteJournal(settings.journalPath === undefined ? {} : { path: settings.journalPath });
  const abort = new AbortController();
  const client = createClient({
    baseUrl: target.origin,
    headers: { authorization: `Bearer ${settings.token as string}` },
    journal,
    signal: abort.signal,
    // A rerun after a kill waits at most this long for the dead process's claims to run out.
    claimTtlMs: 5_000,
    // Shorter than the client's minute: a server that is down stops the run after two rounds of
    // rows (see `unreachableAfter`), yet 20 s still outlasts a restarted `oncely serve`'s lease
    // (10 s) plus its in-flight wait (5 s).
    retry: { budgetMs: 20_000 },
  });
  // Three reasons to stop early, each leaving the journal consistent for a rerun: Ctrl-C; a
  // server that settles nothing (every row of a long run ending pending means it is down or
  // unreachable: retrying a million rows one budget at a time helps nobody); a journal that
  // cannot be written (nothing may be sent that is not journaled first).
  const stop = (reason: StopReason, message: string): void => {
    if (abort.signal.aborted) return;
    run.stopReason = reason;
    process.stderr.write(`\nstopping: ${message}; run the same command again to resume\n`);
    abort.abort(new Error(message));
  };
  // A second Ctrl-C leaves early, once the outcomes already received are written (interrupt.ts).
  const stopListening = onInterrupt({
    stop: () => stop('interrupted', 'interrupted (Ctrl-C)'),
    flush: () => client.close().finally(() => journal.close()),
  });
  const unreachableAfter = Math.max(16, 2 * settings.concurrency);
  let pendingInARow = 0;

  let done = 0;
  const counted = (): void => {
    done += 1;
    progress.update(done, tally.counts, run.sent);
  };
  const inFlight = new Set<Promise<void>>();
  const sendRow = async (row: RowUpload): Promise<void> => {
    try {
      const op = await client.prepare('POST', path, { key: row.key, body: row.body, headers: { 'content-type': 'application/json' } });
      const result = await op.send();
      pendingInARow = 0;
      run.sent += 1;
      tally.record(result.replayed ? 'replayed' : 'executed');
    } catch (error) {
      const stopReason = run.stopReason;
      if (!isOncelyError(error, 'ABORTED')) run.sent += 1;
      // 401/403 settle nothing (the server executed nothing): every row stays pending, and
      // sending the others with the same token would only be refused the same way.
      if (isOncelyError(error, 'HTTP_ERROR') && (error.status === 401 || error.status === 403)) {
        tally.record('pending', { line: row.line, key: row.key, status: error.status, reason: 'unauthorized: check --token' });
        stop('unauthorized', `the server answered ${error.status}: unauthorized, check --token`);
      } else if (isOncelyError(error, 'ABORTED') && stopReason !== undefined) {
        // Cut off by the run's own stop, not by a caller: say which stop, and what it means for the row.
        tally.record('pending', { line: row.line, key: row.key, reason: CUT_OFF[stopReason] });
      } else if (isOncelyError(error) && (error.code === 'OPERATION_PENDING' || error.code === 'ABORTED' || error.code === 'JOURNAL_ERROR')) {
        tally.record('pending', { line: row.line, key: row.key, reason: error.message });
        if (error.code === 'JOURNAL_ERROR') stop('journal', `the journal failed: ${error.message}`);
        pendingInARow += 1;
        if (pendingInARow >= unreachableAfter) stop('unreachable', `${pendingInARow} rows in a row got no final outcome from ${target.origin}`);
      } else {
        pendingInARow = 0;
        const status = (error as { status?: unknown }).status;
        tally.record('declined', {
          line: row.line,
          key: row.key,
          ...(typeof status === 'number' ? { status } : {}),
          reason: error instanceof Error ? error.message : String(error),
        });
      }
    }
    counted();
  };

  try {
    for await (const batch of validBatches(settings, tally, () => abort.signal.aborted, duplicates)) {
      if (abort.signal.aborted) break;
      const operations: NewOperation[] = batch.map((row) => ({
        scope: client.scope,
        key: row.key,
        method: 'POST',
        url: target.href,
        headers: { 'content-type': 'application/json' },
        body: row.body,
        fingerprint: rowFingerprint(path, row.body),
        // Every row is to be sent: journaled as submitted, so `oncely resume` may finish it too.
        submitted: true,
      }));
      // Durable before any row of the batch is sent: a crash from here on loses nothing.
      const outcomes = await journal.putMany(operations);
      for (const [index, outcome] of outcomes.entries()) {
        const row = batch[index] as RowUpload;
        const { record } = outcome;
        if (!outcome.created && record.fingerprint !== operations[index]?.fingerprint) {
          tally.record('declined', {
            line: row.line,
            key: row.key,
            reason:
              'the row changed since it was sent, and the server may have used its key for the earlier request: change a key column to send it as a new one',
          });
          counted();
        } else if (record.state === OperationState.Succeeded) {
          tally.record('replayed');
          counted();
        } else if (record.state === OperationState.Failed) {
          tally.record('declined', {
            line: row.line,
            key: row.key,
            ...(record.lastStatus === null ? {} : { status: record.lastStatus }),
            reason: 'declined on an earlier run',
          });
          counted();
        } else if (abort.signal.aborted) {
          // Journaled, pending, never sent: `oncely pending` lists it, so the report counts it.
          run.unsent += 1;
          tally.record('pending');
          counted();
        } else {
          const task = sendRow(row).finally(() => inFlight.delete(task));
          inFlight.add(task);
          // Backpressure: reading waits while every slot is busy, so memory stays flat.
          while (inFlight.size >= settings.concurrency) await Promise.race(inFlight);
        }
      }
    }
    await Promise.all(inFlight);
    progress.finish(done, tally.counts, run.sent);
  } finally {
    stopListening();
    await client.close();
    await journal.close();
  }
}

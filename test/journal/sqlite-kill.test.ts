/**
 * A process writing batches to a SQLite journal is SIGKILLed mid-stream, at once and again
 * after a restart: every batch it reported committed is in the file, no batch is half there,
 * and the file opens cleanly (the WAL is recovered, nothing is reset).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { ROOT } from './fixtures/child-process.js';

const WRITER = fileURLToPath(new URL('./fixtures/journal-writer.ts', import.meta.url));
const BATCH = 500;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-kill-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the writer until it has reported `batches` commits (plus a moment), then SIGKILLs it. */
async function writeThenKill(path: string, batches: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, path, String(BATCH), 'process'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let committed = 0;
  const exited = new Promise<string | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`writer made no progress; stderr:\n${stderr}`)), 40_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      committed = Math.max(committed, (JSON.parse(line) as { committed: number }).committed);
      if (committed >= batches) {
        clearTimeout(timer);
        // Killed while it is inside its next batch (or between two): either way, a random point.
        setTimeout(resolve, Math.floor(Math.random() * 5));
      }
    });
    child.on('exit', () => reject(new Error(`writer exited on its own; stderr:\n${stderr}`)));
  });
  const lastReported = committed;
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  return lastReported;
}

describe('SQLite journal under SIGKILL', () => {
  it('keeps every committed batch and never half a batch, across two kills', async () => {
    const path = join(dir, 'journal.db');
    let reported = 0;
    for (const batches of [3, 5]) {
      reported += await writeThenKill(path, batches);
      const journal = sqliteJournal({ path });
      const rows = (await journal.list()).length;
      await journal.close();
      expect(rows % BATCH).toBe(0);
      expect(rows).toBeGreaterThanOrEqual(reported * BATCH);
    }
  }, 120_000);
});

/**
 * What the busy-file tests need: another process holding a SQLite file's write lock, and a
 * watch on this process's event loop.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./sqlite-lock.child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A process holding a file's write lock. */
export interface LockHolder {
  /** Resolves when the holder has rolled back and closed its connection. */
  readonly released: Promise<void>;
}

/** Starts a process that takes `path`'s write lock and holds it `holdMs`; resolves once it holds it. */
export async function holdWriteLock(path: string, holdMs: number): Promise<LockHolder> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, path, String(holdMs)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const seen = (line: string): Promise<void> =>
    new Promise((resolve, reject) => {
      lines.on('line', (text) => text === line && resolve());
      child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before printing ${line}: ${stderr}`)));
    });
  const released = seen('released');
  released.catch(() => undefined);
  await seen('locked');
  return { released };
}

/**
 * Milliseconds this thread has spent runnable but waiting for a CPU (Linux's schedstat); 0
 * where that is not known.
 */
function waitedForCpuMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return 0;
  }
}

/**
 * Watches the event loop; `stop()` returns the longest time between two turns, less the time the
 * thread spent waiting for a CPU meanwhile: on a loaded machine the scheduler, not the code under
 * test, can hold a turn back. Blocking in the code (SQLite's busy handler sleeps) counts in full.
 */
export function watchEventLoop(): { stop(): number } {
  let last = performance.now();
  let lastWait = waitedForCpuMs();
  let longest = 0;
  const turn = (): void => {
    const at = performance.now();
    const wait = waitedForCpuMs();
    longest = Math.max(longest, at - last - (wait - lastWait));
    last = at;
    lastWait = wait;
  };
  const timer = setInterval(turn, 5);
  return {
    stop() {
      clearInterval(timer);
      turn();
      return longest;
    },
  };
}

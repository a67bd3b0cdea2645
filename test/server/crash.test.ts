import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./crash.child.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const node = (args: string[], store: string) =>
  run(process.execPath, ['--import', 'tsx', child, ...args], { timeout: 60_000, env: { ...process.env, ONCELY_TEST_STORE: store } });

/** Runs the crashing child; resolves to the signal that ended it. */
async function crash(path: string, point: string, store: string): Promise<string | undefined> {
  try {
    await node(['crash', path, point], store);
    return undefined;
  } catch (error) {
    return (error as { signal?: string }).signal;
  }
}

// Every point is covered in-process by recovery.test.ts; real processes cost ~1 s each to start,
// so here: a local point, both ambiguous `sent` points, and the worker alone after the rail's.
const CASES = [
  { point: 'H1_DONE', recovery: 'retry' },
  { point: 'EXT1_SENT', recovery: 'retry' },
  { point: 'EXT2_SENT', recovery: 'retry' },
  { point: 'EXT2_SENT', recovery: 'worker' },
];

// The built-in SQLite store, and the minimal reference store over the primitives alone.
describe.each(['sqlite', 'reference'])('a server process SIGKILLed after each recovery point (%s store)', (store) => {
  it('is completed exactly once by a restarted process: by the client retry, or by the recovery worker alone', { timeout: 120_000 }, async () => {
    const results = await Promise.all(
      CASES.map(async ({ point, recovery }, i) => {
        const path = join(dir, `crash-${store}-${i}.db`);
        const signal = await crash(path, point, store);
        const { stdout } = await node([recovery, path], store);
        return { point, recovery, signal, ...(JSON.parse(stdout) as Record<string, unknown>) };
      }),
    );
    for (const result of results) {
      expect(result).toEqual({
        point: result.point,
        recovery: result.recovery,
        signal: 'SIGKILL',
        status: 201,
        replay: result.recovery === 'worker' ? 'true' : null,
        recoveries: result.recovery === 'worker' ? 1 : 0,
        ledger: 1,
        h1: 1,
        h2: 1,
        applied1: 1,
        applied2: 1,
      });
    }
  });
});

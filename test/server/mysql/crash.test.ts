/**
 * The crash matrix on `mysqlKeyStore`: a server process SIGKILLed right after a recovery point
 * commits, and a restarted one completes the payment exactly once, by the client's retry or by
 * the recovery worker alone (the same cases and checks as `../crash.test.ts`). Each case has a
 * database of its own.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../../support/mysql.js';

const exec = promisify(execFile);
const child = fileURLToPath(new URL('./crash.child.ts', import.meta.url));
const node = (args: string[]) => exec(process.execPath, ['--import', 'tsx', child, ...args], { timeout: 60_000 });

/** Runs the crashing child; resolves to the signal that ended it. */
async function crash(url: string, point: string): Promise<string | undefined> {
  try {
    await node(['crash', url, point]);
    return undefined;
  } catch (error) {
    return (error as { signal?: string }).signal;
  }
}

const CASES = [
  { point: 'H1_DONE', recovery: 'retry' },
  { point: 'EXT1_SENT', recovery: 'retry' },
  { point: 'EXT2_SENT', recovery: 'retry' },
  { point: 'EXT2_SENT', recovery: 'worker' },
];

const run = await canRunMysqlTests();
let backend: MysqlBackend;
beforeAll(async () => {
  if (run) backend = await openMysqlBackend('crash');
});
afterAll(async () => backend?.close());

describe.runIf(run)('a server process on mysqlKeyStore SIGKILLed after each recovery point', () => {
  it('is completed exactly once by a restarted process: by the client retry, or by the recovery worker alone', { timeout: 120_000 }, async () => {
    const results = await Promise.all(
      CASES.map(async ({ point, recovery }) => {
        const url = await backend.newDatabase();
        const signal = await crash(url, point);
        const { stdout } = await node([recovery, url]);
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

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { createTestApp } from './fixtures.js';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./handler-race.child.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-handler-procs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Answer {
  status: number;
  replay: string | null;
  retryAfter: string | null;
  body: string;
}

describe('two server processes sharing one SQLite file', () => {
  it('execute 100 identical concurrent requests once between them; the rest are 409 or the replay', { timeout: 60_000 }, async () => {
    const path = join(dir, 'shared.db');
    const startAt = Date.now() + 4000;
    const outputs = await Promise.all([0, 1].map(() => run(process.execPath, ['--import', 'tsx', child, path, String(startAt), '50'], { timeout: 50_000 })));
    const results = outputs.map(({ stdout }) => JSON.parse(stdout) as { answers: Answer[]; railCalls: number });
    const answers = results.flatMap((r) => r.answers);
    expect(answers).toHaveLength(100);
    const executed = answers.filter((a) => a.status === 201 && a.replay === null);
    expect(executed).toHaveLength(1);
    for (const a of answers.filter((x) => x !== executed[0])) {
      if (a.status === 409) expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
      else expect({ status: a.status, replay: a.replay, body: a.body }).toEqual({ status: 201, replay: 'true', body: executed[0]!.body });
    }
    expect(results.reduce((n, r) => n + r.railCalls, 0)).toBe(1);

    const check = await createTestApp({ store: sqliteKeyStore({ path }) });
    expect(await check.count('ledger')).toBe(1);
    expect(await check.count('step_runs', 'step = $1', ['H1_DONE'])).toBe(1);
    await check.store.close?.();
  });
});

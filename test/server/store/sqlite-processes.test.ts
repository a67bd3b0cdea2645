import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./sqlite-race.child.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-procs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sqliteKeyStore shared by several processes', () => {
  it('lets exactly one of four processes admit each key and take over each expired row', { timeout: 60_000 }, async () => {
    const path = join(dir, 'shared.db');
    const setup = sqliteKeyStore({ path });
    await setup.migrate();
    const n = 50;
    for (let i = 0; i < n; i += 1) {
      await setup.admit({ clientId: 'acme', key: `t${i}`, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 1, ttlMs: 60_000 });
    }
    await setup.close();
    await new Promise((resolve) => setTimeout(resolve, 10));

    const startAt = Date.now() + 4000;
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', child, path, String(startAt), String(n)], { timeout: 50_000 })),
    );
    const results = outputs.map(({ stdout }) => JSON.parse(stdout) as { admitted: string[]; tookOver: string[] });
    const admitted = results.flatMap((r) => r.admitted).sort();
    const tookOver = results.flatMap((r) => r.tookOver).sort();
    expect(admitted).toHaveLength(n);
    expect(new Set(admitted).size).toBe(n);
    expect(tookOver).toHaveLength(n);
    expect(new Set(tookOver).size).toBe(n);

    const check = sqliteKeyStore({ path });
    expect((await check.sweep(1000)).length).toBe(0);
    await check.close();
  });
});

/**
 * oncely installed as a user on Node 22 or 24 installs it: `npm install oncely` and nothing else,
 * with install scripts on (`--foreground-scripts`: whatever would compile prints here). The SQLite
 * journal and key store must then work on Node's own `node:sqlite`, with nothing built, no
 * better-sqlite3 in node_modules and nothing printed on stderr. The Node binaries come from the
 * npm registry (`scripts/node-versions.sh`, cached in `.cache/node`; CI fetched them already).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSIONS = ['22.23.5', '24.22.3'] as const;

let work: string;
let tarball: string;
const bins = new Map<string, string>();

const USE = `
import { sqliteJournal } from 'oncely/node';
import { sqliteKeyStore } from 'oncely/server/sqlite';
const journal = sqliteJournal({ path: './journal.db' });
await journal.put({ scope: 'http://127.0.0.1', key: 'k1', method: 'POST', url: 'http://127.0.0.1/pay', headers: {}, body: '{}', fingerprint: 'f' });
const listed = (await journal.list()).length;
await journal.close();
const store = sqliteKeyStore({ path: './store.db', checkpointIntervalMs: 5 });
await store.migrate();
const admitted = await store.admit({ clientId: 'c', key: 'k', requestHash: 'h', endpoint: 'POST /pay', requestBody: '{}', leaseMs: 1000, ttlMs: 60000 });
await new Promise((resolve) => setTimeout(resolve, 100));
await store.close();
console.log(JSON.stringify({ node: process.version, driver: journal.driver, listed, owned: admitted.owned }));
`;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'oncely-node-sqlite-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' })) as Array<{
    filename: string;
  }>;
  tarball = join(work, packed[0]?.filename ?? '');
  const dirs = execFileSync(join(ROOT, 'scripts/node-versions.sh'), VERSIONS, { encoding: 'utf8' }).trim().split('\n');
  VERSIONS.forEach((version, index) => bins.set(version, dirs[index] ?? ''));
}, 240_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each(VERSIONS)('npm install oncely on Node %s', (version) => {
  it('builds nothing, installs no better-sqlite3, and runs the journal and the key store on node:sqlite without a warning', () => {
    const dir = join(work, `node-${version}`);
    const env = { ...process.env, PATH: `${bins.get(version)}:${process.env['PATH'] ?? ''}` };
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `node-${version.split('.')[0]}`, private: true, version: '1.0.0', type: 'module' }));
    writeFileSync(join(dir, 'use.mjs'), USE);
    const install = spawnSync('npm', ['install', tarball, '--foreground-scripts', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: dir,
      env,
      encoding: 'utf8',
    });
    expect(install.status, install.stderr).toBe(0);
    expect(`${install.stdout}${install.stderr}`).not.toMatch(/node-gyp|prebuild-install|gyp info/);
    expect(existsSync(join(dir, 'node_modules/better-sqlite3'))).toBe(false);
    const used = spawnSync('node', ['use.mjs'], { cwd: dir, env, encoding: 'utf8' });
    expect({ status: used.status, stderr: used.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(used.stdout)).toEqual({ node: `v${version}`, driver: 'node:sqlite', listed: 1, owned: true });
  });
});

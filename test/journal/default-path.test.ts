import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JOURNAL_ENV, defaultJournalPath } from '../../src/journal/default.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { operation } from '../contract/journal.contract.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-default-'));
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

describe('default journal path', () => {
  it('is ~/.oncely/journal.db when neither a path nor ONCELY_JOURNAL is given', () => {
    expect(defaultJournalPath({ env: {}, homeDir: '/home/ada' })).toBe('/home/ada/.oncely/journal.db');
  });

  it('follows ONCELY_JOURNAL when no path is given', () => {
    expect(defaultJournalPath({ env: { [JOURNAL_ENV]: '/var/lib/app/j.db' }, homeDir: '/home/ada' })).toBe('/var/lib/app/j.db');
  });

  it('keeps an explicit path over ONCELY_JOURNAL, resolved to an absolute path', () => {
    expect(defaultJournalPath({ path: 'jobs.db', env: { [JOURNAL_ENV]: '/var/lib/app/j.db' } })).toBe(resolve('jobs.db'));
  });

  it('creates the directory and file of the default journal, owner-only, on first use', async () => {
    const target = join(dir, 'nested', 'deeper', 'journal.db');
    vi.stubEnv(JOURNAL_ENV, target);
    const journal = sqliteJournal();
    expect(journal.path).toBe(target);
    expect(existsSync(join(dir, 'nested'))).toBe(false);
    await journal.put(operation());
    expect(existsSync(target)).toBe(true);
    expect(statSync(join(dir, 'nested', 'deeper')).mode & 0o777).toBe(0o700);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(statSync(`${target}-wal`).mode & 0o777).toBe(0o600);
    expect(await journal.list()).toHaveLength(1);
    await journal.close();
  });
});

/**
 * Operations lost with a damaged or cut-short write-ahead log are noticed when the journal is
 * opened: SQLite's recovery stops at the first bad WAL frame without an error, so the journal
 * keeps a count of the operations it wrote where the WAL's damage cannot reach it, and says how
 * many are missing. A journal that lost nothing — reopened, killed, shared, replaced — opens as
 * before.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { JournalError } from '../../src/errors.js';
import { sqliteJournal, type SqliteJournal } from '../../src/journal/sqlite.node.js';
import { runCli } from '../cli/helpers/processes.js';

const COUNT = 20;
/** Where the journal keeps its count of operations written: deleting it acknowledges a loss. */
const markPath = (path: string): string => `${path}-mark`;
const BASE_URL = 'http://127.0.0.1:9';
/** The WAL's header, and each frame's: a frame is its header and one page (SQLite's default 4096 bytes). */
const WAL_HEADER = 32;
const FRAME = 24 + 4096;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-wal-loss-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Journals `count` payments with the client, as submitted; returns the journal, still open, and the keys. */
async function journalPayments(path: string, count: number): Promise<{ journal: SqliteJournal; keys: string[] }> {
  const journal = sqliteJournal({ path });
  const client = createClient({ baseUrl: BASE_URL, journal });
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await client.prepare('POST', 'v1/pay', { json: { amount: 500 + i } });
    await journal.update(client.scope, op.key, { submittedAt: Date.now() });
    keys.push(op.key);
  }
  return { journal, keys };
}

/**
 * The journal's files as a process killed now would leave them (its connection still open, so
 * nothing is checkpointed), copied into `into`; returns the copy's path.
 */
function crashImage(path: string, into: string): string {
  mkdirSync(into);
  for (const name of readdirSync(dir).filter((file) => file.startsWith('journal.db'))) copyFileSync(join(dir, name), join(into, name));
  return join(into, 'journal.db');
}

/** Overwrites one WAL frame, a quarter of the way in, with bytes SQLite's checksum refuses. */
function damageWal(path: string): void {
  const wal = readFileSync(`${path}-wal`);
  const frames = (wal.length - WAL_HEADER) / FRAME;
  expect(frames).toBeGreaterThan(40);
  const offset = WAL_HEADER + Math.floor(frames / 4) * FRAME;
  wal.fill(0x5a, offset + 24, offset + FRAME);
  writeFileSync(`${path}-wal`, wal);
}

const rejection = async (promise: Promise<unknown>): Promise<JournalError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JournalError);
  return error as JournalError;
};

/** Rows in the file as SQLite itself reads it now. */
const rowsIn = (path: string): number => {
  const raw = openRawDb(path, { readonly: true });
  const { n } = raw.prepare('SELECT count(*) AS n FROM oncely_operations').get() as { n: number };
  raw.close();
  return n;
};

describe('SQLite journal whose write-ahead log lost commits', () => {
  it('fails to open with a JournalError naming how many operations are missing, keeps the WAL as found, and says so again on every open', async () => {
    const { journal } = await journalPayments(join(dir, 'journal.db'), COUNT);
    const path = crashImage(join(dir, 'journal.db'), join(dir, 'crashed'));
    await journal.close();
    damageWal(path);
    const walAsFound = readFileSync(`${path}-wal`);

    const reopened = sqliteJournal({ path });
    const error = await rejection(createClient({ baseUrl: BASE_URL, journal: reopened }).pending());
    const [, lost] = /^(\d+) of the 20 operations this journal recorded as written (?:is|are) no longer in it/.exec(error.message) ?? [];
    expect(error.message).toMatch(/write-ahead log \(-wal\) was damaged or cut short/);
    expect(error.path).toBe(path);
    const kept = readdirSync(join(dir, 'crashed')).filter((name) => name.startsWith('journal.db-wal.lost-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(dir, 'crashed', kept[0] as string)).equals(walAsFound)).toBe(true);
    expect(error.hint).toContain(`kept at ${join(dir, 'crashed', kept[0] as string)}`);
    expect(error.hint).toContain(`delete ${markPath(path)}`);
    await reopened.close();
    // What SQLite kept plus what the error names is everything the client wrote.
    expect(Number(lost)).toBeGreaterThan(0);
    expect(rowsIn(path) + Number(lost)).toBe(COUNT);

    await expect(sqliteJournal({ path }).list()).rejects.toThrow(new RegExp(`^${lost} of the 20 operations`));
    const cli = await runCli(['pending', '--journal', path]);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toMatch(new RegExp(`${lost} of the 20 operations .* no longer in it`));
  }, 60_000);

  it('opens with what is left once the loss is acknowledged by deleting the mark', async () => {
    const { journal } = await journalPayments(join(dir, 'journal.db'), COUNT);
    const path = crashImage(join(dir, 'journal.db'), join(dir, 'crashed'));
    await journal.close();
    damageWal(path);
    await rejection(sqliteJournal({ path }).list());
    unlinkSync(markPath(path));

    const accepted = sqliteJournal({ path });
    const left = await accepted.list();
    expect(left.length).toBe(rowsIn(path));
    await accepted.put({ ...(left[0] as NonNullable<(typeof left)[0]>), key: 'after-the-loss', submitted: true });
    await accepted.close();
    expect(
      await sqliteJournal({ path })
        .list()
        .then((records) => records.length),
    ).toBe(left.length + 1);
  });

  it('reports a WAL cut short, as a partial copy leaves it', async () => {
    const { journal } = await journalPayments(join(dir, 'journal.db'), COUNT);
    const path = crashImage(join(dir, 'journal.db'), join(dir, 'crashed'));
    await journal.close();
    truncateSync(`${path}-wal`, Math.floor(statSync(`${path}-wal`).size / 2));
    const error = await rejection(sqliteJournal({ path }).list());
    expect(error.message).toMatch(/^\d+ of the 20 operations this journal recorded as written are no longer in it/);
  });
});

describe('SQLite journal that lost nothing', () => {
  it('reopens after a crash image with an intact WAL, with every operation', async () => {
    const { journal, keys } = await journalPayments(join(dir, 'journal.db'), COUNT);
    const path = crashImage(join(dir, 'journal.db'), join(dir, 'crashed'));
    await journal.close();
    const reopened = sqliteJournal({ path });
    expect((await reopened.list()).map((record) => record.key)).toEqual(keys);
    await reopened.close();
  });

  it('reopens when two handles wrote to the file in turn, each advancing the mark', async () => {
    const path = join(dir, 'journal.db');
    const a = await journalPayments(path, 5);
    const b = await journalPayments(path, 5);
    await a.journal.putMany(
      [0, 1, 2].map((i) => ({ scope: BASE_URL, key: `a-${i}`, method: 'POST', url: `${BASE_URL}/v1/pay`, headers: {}, body: null, fingerprint: 'f' })),
    );
    await b.journal.close();
    await a.journal.close();
    const reopened = sqliteJournal({ path });
    expect(await reopened.list()).toHaveLength(13);
    await reopened.close();
  });

  it('opens a new journal created where an older one was moved aside, its mark left behind', async () => {
    const path = join(dir, 'journal.db');
    const { journal } = await journalPayments(path, 3);
    await journal.close();
    renameSync(path, join(dir, 'old.db'));
    expect(existsSync(markPath(path))).toBe(true);
    const fresh = sqliteJournal({ path });
    expect(await fresh.list()).toEqual([]);
    await fresh.close();
  });
});

/**
 * Where the Node journal lives when the caller does not say.
 *
 * @module
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The environment variable that relocates the default journal file.
 *
 * @example
 * ```ts
 * process.env[JOURNAL_ENV] = '/var/lib/app/oncely.db'; // same as ONCELY_JOURNAL=… in the shell
 * ```
 */
export const JOURNAL_ENV = 'ONCELY_JOURNAL';

/**
 * Inputs of {@link defaultJournalPath}; each defaults to the real process's value.
 *
 * @example
 * ```ts
 * const options: JournalPathOptions = { env: {}, homeDir: '/home/ada' };
 * ```
 */
export interface JournalPathOptions {
  /** An explicit path: used as is, whatever the environment says. */
  readonly path?: string | undefined;
  /** The environment to read `ONCELY_JOURNAL` from. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The user's home directory. @default os.homedir() */
  readonly homeDir?: string;
}

/**
 * Resolves the journal file: an explicit `path`, else `ONCELY_JOURNAL`, else
 * `~/.oncely/journal.db` (one journal per user, shared by that user's processes — claims keep
 * them from resuming the same operation twice).
 *
 * An explicit path wins over the environment on purpose: two journals given different paths in
 * code must never be merged into one file by an environment variable, because a client resumes
 * every pending operation it finds with its own credentials.
 *
 * @example
 * ```ts
 * defaultJournalPath();                          // '/home/ada/.oncely/journal.db'
 * defaultJournalPath({ env: { ONCELY_JOURNAL: '/var/lib/app/journal.db' } }); // '/var/lib/app/journal.db'
 * defaultJournalPath({ path: './jobs.db' });     // '/srv/app/jobs.db' (absolute)
 * ```
 */
export function defaultJournalPath(options: JournalPathOptions = {}): string {
  const fromEnv = (options.env ?? process.env)[JOURNAL_ENV];
  if (options.path !== undefined && options.path !== '') return isInMemory(options.path) ? options.path : resolve(options.path);
  if (fromEnv !== undefined && fromEnv !== '') return resolve(fromEnv);
  return join(options.homeDir ?? homedir(), '.oncely', 'journal.db');
}

/**
 * Creates the journal's directory and file if they are missing, readable by their owner only: a
 * journal holds request bodies (amounts, references) until they are pruned. SQLite gives the
 * `-wal` and `-shm` files the mode of the database file, so they inherit `0600` too. An
 * existing file is left exactly as it is.
 *
 * @internal
 */
export function ensureJournalFile(path: string): void {
  if (isInMemory(path)) return;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * Whether `path` names an in-memory SQLite database (no file, nothing beside it).
 *
 * @internal
 */
export function isInMemory(path: string): boolean {
  return path === ':memory:' || path.startsWith('file::memory:');
}

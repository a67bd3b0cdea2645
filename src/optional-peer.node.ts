/**
 * The drivers and server pieces are optional peer dependencies: a browser app, or a Node app
 * that only needs `memoryJournal()`, installs none of them. Each is loaded on first use, and a
 * missing one fails with the command that installs it, not a bundler or resolver crash.
 *
 * @module
 * @internal
 */
import { createRequire } from 'node:module';
import { ErrorCode, OncelyError } from './errors/oncely-error.js';

const require = createRequire(import.meta.url);

/** The peers, each with the version range known to work on Node 20 and what needs it. */
export const PEERS = {
  'better-sqlite3': {
    range: '12',
    neededBy: `the SQLite journal (sqliteJournal, the default journal of oncely/node) and the SQLite key store on Node ${process.versions.node}, which has no usable node:sqlite (Node 22.16 and later need nothing installed)`,
  },
  pg: { range: '8', neededBy: 'the PostgreSQL key store' },
  mysql2: { range: '3', neededBy: 'the MySQL key store' },
  '@hono/node-server': { range: '2', neededBy: '`oncely serve` and `oncely demo`' },
  pino: { range: '10', neededBy: '`oncely serve`' },
} as const;

/** One of {@link PEERS}' names. */
export type PeerName = keyof typeof PEERS;

/** The command that installs `names`, each at its known range. */
const installCommand = (names: readonly PeerName[]): string => `npm install ${names.map((name) => `${name}@${PEERS[name].range}`).join(' ')}`;

/** The error a missing peer turns into. */
export function missingPeer(name: PeerName, cause: unknown): OncelyError {
  return new OncelyError(ErrorCode.Config, `${name} is not installed; it is needed for ${PEERS[name].neededBy}. Install it: ${installCommand([name])}`, {
    cause,
  });
}

const isMissing = (error: unknown, name: string): boolean => {
  const code = (error as { code?: unknown }).code;
  return (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(name);
};

/**
 * Checks that every peer `user` needs can be found, without loading any, so that one run names
 * every missing package and one command installs them all (loading them one by one took a run
 * per package). `resolve` is `require.resolve`; tests pass another.
 *
 * @throws OncelyError (`CONFIG`) naming each missing peer and the command that installs them
 *
 * @example
 * ```ts
 * assertPeers('`oncely serve`', ['@hono/node-server', 'pino', 'better-sqlite3']);
 * ```
 */
export function assertPeers(user: string, names: readonly PeerName[], resolve: (name: string) => string = require.resolve): void {
  const missing = names.filter((name) => {
    try {
      resolve(name);
      return false;
    } catch (error) {
      if (isMissing(error, name)) return true;
      throw error;
    }
  });
  const [only] = missing;
  if (only === undefined) return;
  if (missing.length === 1) throw missingPeer(only, undefined);
  throw new OncelyError(
    ErrorCode.Config,
    `${user} needs ${missing.length} packages that are not installed: ${missing.join(', ')}. Install them: ${installCommand(missing)}`,
  );
}

/**
 * Loads a CommonJS peer (better-sqlite3, pg) synchronously.
 *
 * @example
 * ```ts
 * const Database = requirePeer<typeof import('better-sqlite3')>('better-sqlite3');
 * ```
 */
export function requirePeer<T>(name: PeerName): T {
  try {
    // The comments keep bundlers (Turbopack, webpack) from resolving the peer at build time: a
    // Next.js app that bundles oncely (as it must, for oncely/react to share the app's React
    // when a client component renders on the server) would otherwise fail to build with "Cannot
    // find module as expression is too dynamic". Node loads the peer at run time, as it would.
    return require(/* webpackIgnore: true */ /* turbopackIgnore: true */ name) as T;
  } catch (error) {
    throw isMissing(error, name) ? missingPeer(name, error) : error;
  }
}

/**
 * Loads an ES module peer (@hono/node-server, pino).
 *
 * @example
 * ```ts
 * const { serve } = await importPeer<typeof import('@hono/node-server')>('@hono/node-server');
 * ```
 */
export async function importPeer<T>(name: PeerName): Promise<T> {
  try {
    return (await import(/* webpackIgnore: true */ /* turbopackIgnore: true */ name)) as T;
  } catch (error) {
    throw isMissing(error, name) ? missingPeer(name, error) : error;
  }
}

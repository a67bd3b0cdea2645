/** Optional peers: a run that lacks several names them all, with one command that installs them. */
import { describe, expect, it } from 'vitest';
import { ErrorCode, isOncelyError } from '../src/errors.js';
import { assertPeers, missingPeer } from '../src/optional-peer.node.js';

/** `require.resolve` in a project where only `installed` are installed. */
const resolver =
  (...installed: string[]) =>
  (name: string): string => {
    if (installed.includes(name)) return `/project/node_modules/${name}/index.js`;
    throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' });
  };

describe('assertPeers', () => {
  it('names every missing package in one error, with one command that installs them all', () => {
    const error = (() => {
      try {
        assertPeers('`oncely serve`', ['@hono/node-server', 'pino', 'better-sqlite3'], resolver('pino'));
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    expect(isOncelyError(error, ErrorCode.Config)).toBe(true);
    expect((error as Error).message).toBe(
      '`oncely serve` needs 2 packages that are not installed: @hono/node-server, better-sqlite3. Install them: npm install @hono/node-server@2 better-sqlite3@12',
    );
  });

  it('passes when every peer is installed, and names a single missing one with what needs it', () => {
    expect(() => assertPeers('`oncely serve`', ['pino', 'pg'], resolver('pino', 'pg'))).not.toThrow();
    expect(() => assertPeers('`oncely serve`', ['pino', 'pg'], resolver('pino'))).toThrow(
      'pg is not installed; it is needed for the PostgreSQL key store. Install it: npm install pg@8',
    );
  });

  it('rethrows a resolution failure that is not a missing package', () => {
    const broken = (): string => {
      throw new Error('EACCES: permission denied');
    };
    expect(() => assertPeers('`oncely serve`', ['pino'], broken)).toThrow('EACCES');
  });
});

describe('missingPeer', () => {
  it('says which package is missing, what needs it and how to install it, in one sentence that agrees with itself', () => {
    expect(missingPeer('better-sqlite3', undefined).message).toBe(
      `better-sqlite3 is not installed; it is needed for the SQLite journal (sqliteJournal, the default journal of oncely/node) and the SQLite key store on Node ${process.versions.node}, which has no usable node:sqlite (Node 22.16 and later need nothing installed). Install it: npm install better-sqlite3@12`,
    );
  });
});

/**
 * Opens a SQLite journal and a SQLite key store with its checkpoint worker (both on the driver this
 * Node picks), writes to each, then emits a warning of its own: its stderr shows what a user of
 * oncely would see printed.
 *
 * Usage: `node --import tsx test/sqlite/warnings.child.ts <dir>`
 */
import { join } from 'node:path';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';

const dir = process.argv[2] as string;
const journal = sqliteJournal({ path: join(dir, 'journal.db') });
await journal.put({ scope: 'http://127.0.0.1', key: 'k', method: 'POST', url: 'http://127.0.0.1/x', headers: {}, body: '{}', fingerprint: 'f' });
await journal.close();
const store = sqliteKeyStore({ path: join(dir, 'store.db'), checkpointIntervalMs: 5 });
await store.migrate();
await store.admit({ clientId: 'c', key: 'k', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 1000, ttlMs: 60_000 });
// Long enough for the worker to have opened its own connection and checkpointed.
await new Promise((resolve) => setTimeout(resolve, 200));
await store.close();
process.emitWarning('the application warns', 'ExperimentalWarning');
process.stdout.write(`${journal.driver}\n`);

/**
 * Holds the write lock of a SQLite file from another process: opens `path`, runs `BEGIN
 * IMMEDIATE`, prints `locked`, keeps the transaction open for `holdMs`, then rolls it back,
 * prints `released` and exits.
 *
 * Usage: `node --import tsx test/support/sqlite-lock.child.ts <path> <holdMs>`
 */
import { openRawDb } from './sqlite-db.js';

const [path = '', holdMs = '1500'] = process.argv.slice(2);
const db = openRawDb(path, { fileMustExist: true });
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
setTimeout(() => {
  db.exec('ROLLBACK');
  db.close();
  process.stdout.write('released\n');
}, Number(holdMs));

/** The key store of the app's guarded routes (one per server process). */
import { sqliteKeyStore } from 'oncely/server/sqlite';

export const store = sqliteKeyStore({ path: process.env['ONCELY_NEXT_DB'] ?? 'keys.db' });

/**
 * Runs once when the server starts (never at build): the key table and the app's payments table.
 * A payment's key is not unique in its table: only the guard keeps a retry from paying twice.
 */
export async function register(): Promise<void> {
  if (process.env['NEXT_RUNTIME'] !== 'nodejs') return;
  const { store } = await import('./lib/store');
  await store.migrate({
    sqlite: 'CREATE TABLE IF NOT EXISTS payments (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, reference TEXT NOT NULL, amount INTEGER NOT NULL)',
    postgres: 'CREATE TABLE IF NOT EXISTS payments (id serial PRIMARY KEY, key text NOT NULL, reference text NOT NULL, amount integer NOT NULL)',
  });
}

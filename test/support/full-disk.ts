/**
 * A full disk under a key store, made and freed on demand, deterministically, with no root tricks.
 *
 * On a real full disk every write fails once its WAL frames (or PostgreSQL's new pages) find no
 * room, whatever it changes: an UPDATE that clears a lease fails as an INSERT does. So here every
 * UPDATE and DELETE of the key table is made to need room:
 *
 * - SQLite: a trigger spills a blob into a side table on each of them, and `PRAGMA max_page_count`
 *   (a limit of the store's own connection) is set to the file's size, so the spill fails with a
 *   genuine `SQLITE_FULL` and SQLite undoes the whole write. The spilled blobs are kept: pages freed
 *   by a delete would be reused by the next spill without growing the file.
 * - PostgreSQL: a trigger raises `disk_full` (SQLSTATE 53100, what PostgreSQL answers when it cannot
 *   extend a file) while a flag row says the disk is full.
 *
 * Admissions (INSERTs) are left alone: the tests fill the disk while a request is in flight.
 */
import type { KeyStore } from '../../src/server/store/types.js';
import type { PgBackend } from './pg.js';

/** A full disk that a test fills and frees. */
export interface Disk {
  fill(): Promise<void>;
  free(): Promise<void>;
}

/** SQLite's largest `max_page_count`: no limit but the disk's. */
const NO_LIMIT = 1_073_741_823;

/**
 * The disk under `store` (a SQLite store on a file), with its key table's writes made to need room.
 * The limit belongs to this store's connection: another store on the same file still has room.
 */
export async function sqliteDisk(store: KeyStore): Promise<Disk> {
  await store.transaction(async (tx) => {
    await tx.run('CREATE TABLE IF NOT EXISTS disk_spill (b BLOB)');
    for (const event of ['UPDATE', 'DELETE']) {
      await tx.run(`CREATE TRIGGER IF NOT EXISTS disk_spill_${event} AFTER ${event} ON oncely_keys BEGIN INSERT INTO disk_spill VALUES (zeroblob(65536)); END`);
    }
  });
  return {
    fill: () =>
      store.transaction(async (tx) => {
        const { page_count } = (await tx.get<{ page_count: number }>('PRAGMA page_count'))!;
        await tx.get(`PRAGMA max_page_count = ${page_count}`);
      }),
    free: () => store.transaction(async (tx) => void (await tx.get(`PRAGMA max_page_count = ${NO_LIMIT}`))),
  };
}

/** The disk under the PostgreSQL store in `schema`, as `backend` reaches it. */
export async function postgresDisk(backend: PgBackend, schema: string): Promise<Disk> {
  await backend.query(`CREATE TABLE ${schema}.disk_full (full_since timestamptz)`);
  await backend.query(`CREATE FUNCTION ${schema}.disk_full_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM ${schema}.disk_full) THEN
        RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
      END IF;
      RETURN NULL;
    END $$`);
  await backend.query(
    `CREATE TRIGGER disk_full_check AFTER UPDATE OR DELETE ON ${schema}.oncely_keys FOR EACH ROW EXECUTE FUNCTION ${schema}.disk_full_check()`,
  );
  return {
    fill: async () => void (await backend.query(`INSERT INTO ${schema}.disk_full VALUES (now())`)),
    free: async () => void (await backend.query(`DELETE FROM ${schema}.disk_full`)),
  };
}

/**
 * PostgreSQL connections that drop under a store's writes, on demand: while a flag row is set,
 * every UPDATE or DELETE of the key table terminates its own backend (`pg_terminate_backend` of
 * itself), so the store sees its connection close mid-statement, as after a network cut or a
 * server restart; the other connections of its pool, and new ones, stay up.
 */
import type { PgBackend } from './pg.js';

/** Connections that drop under the key table's writes while `cut`, until `mend`. */
export interface FlakyConnections {
  cut(): Promise<void>;
  mend(): Promise<void>;
}

/** Makes the key table of the store in `schema` drop the connections that write it while cut. */
export async function droppingConnections(backend: PgBackend, schema: string): Promise<FlakyConnections> {
  await backend.query(`CREATE TABLE ${schema}.connections_cut (since timestamptz)`);
  await backend.query(`CREATE FUNCTION ${schema}.connections_cut_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM ${schema}.connections_cut) THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
      END IF;
      RETURN NULL;
    END $$`);
  await backend.query(
    `CREATE TRIGGER connections_cut_check AFTER UPDATE OR DELETE ON ${schema}.oncely_keys FOR EACH ROW EXECUTE FUNCTION ${schema}.connections_cut_check()`,
  );
  return {
    cut: async () => void (await backend.query(`INSERT INTO ${schema}.connections_cut VALUES (now())`)),
    mend: async () => void (await backend.query(`DELETE FROM ${schema}.connections_cut`)),
  };
}

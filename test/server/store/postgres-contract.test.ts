/**
 * The shared KeyStore contract on PostgreSQL (a server when one is reachable, see
 * test/support/pg.ts) and on PGlite; every test uses its own client id, so all share one schema per
 * engine.
 */
import { afterAll, beforeAll } from 'vitest';
import { describeKeyStore } from '../../../src/server/testing.js';
import { openPgBackend, openPglite, type PgBackend } from '../../support/pg.js';

const backends: Array<Promise<PgBackend>> = [];
afterAll(async () => {
  for (const backend of backends) await (await backend).close();
});

function contractOn(name: string, open: () => Promise<PgBackend>, boundsWait: boolean): void {
  let backend: Promise<PgBackend> | undefined;
  let schema: string | undefined;
  // Started before any test: PGlite takes seconds to boot, more on a busy machine.
  beforeAll(async () => {
    backend = open();
    backends.push(backend);
    await backend;
  });
  const factory = async () => {
    const ready = await backend!;
    schema ??= ready.newSchema();
    return ready.open(schema);
  };
  describeKeyStore(name, factory, { boundsWait });
}

contractOn('postgres', () => openPgBackend('contract'), true);
contractOn('postgres (PGlite)', () => openPglite('contract_pglite'), false);

/**
 * Model-based runs of the KeyStore contract (src/server/store/types.ts) on SQLite, on its
 * injectable clock, and on PostgreSQL: random sequences of admissions (concurrent ones of one key
 * included), takeovers after a lease ran out, fenced writes by current and stale owners, finish,
 * release, park, sweep and reap, checked call by call against ./keystore-model.ts (commands: ./keystore-commands.ts).
 */
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { sqliteKeyStore } from '../../../../src/server/sqlite.js';
import type { KeyStore } from '../../../../src/server/store/types.js';
import { openPgBackend, type PgBackend } from '../../../support/pg.js';
import { checkProperty } from '../../settings.js';
import { storeCommands } from './keystore-commands.js';
import { EFFECTS_SCHEMA, HOUR, emptyModel, type RealStore } from './keystore-model.js';

const START = Date.UTC(2026, 11, 6, 12, 0, 0);

describe('KeyStore model: SQLite', () => {
  it(
    'agrees with the model on every answer and every row, its clock moved by the run',
    () =>
      checkProperty(
        fc.asyncProperty(fc.commands(storeCommands([0, 1, 100, 1_000, HOUR], true), { maxCommands: 40, size: 'medium' }), async (commands) => {
          const clock = { now: START };
          const store = sqliteKeyStore({ path: ':memory:', now: () => clock.now });
          try {
            await store.migrate(EFFECTS_SCHEMA);
            const real: RealStore = { store, clientId: 'acme', clock, leases: [] };
            await fc.asyncModelRun(() => ({ model: emptyModel(START), real }), commands);
          } finally {
            await store.close();
          }
        }),
        60,
        40_000,
      ),
    45_000,
  );
});

describe('KeyStore model: PostgreSQL', () => {
  let backend: PgBackend;
  let store: KeyStore & { readonly schema: string };
  beforeAll(async () => {
    backend = await openPgBackend('keystore_model');
    store = await backend.store();
    await store.migrate?.(EFFECTS_SCHEMA);
  });
  afterAll(async () => {
    await backend?.close();
  });

  it(
    'agrees with the model on every answer and every row, leases of zero or an hour on the database clock',
    () =>
      checkProperty(
        fc.asyncProperty(fc.commands(storeCommands([0, HOUR], false), { maxCommands: 40, size: 'medium' }), async (commands) => {
          // Sweep and reap see every client's rows: each run starts from an empty table.
          await backend.query(`DELETE FROM ${store.schema}.oncely_keys`);
          const real: RealStore = { store, clientId: `c${randomUUID().slice(0, 8)}`, clock: undefined, leases: [] };
          await fc.asyncModelRun(() => ({ model: emptyModel(0), real }), commands);
        }),
        25,
        40_000,
      ),
    45_000,
  );
});

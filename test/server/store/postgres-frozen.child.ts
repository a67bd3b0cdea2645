/**
 * Child process of postgres-frozen.test.ts: admits one key as a whole request on PostgreSQL, its
 * work writes a note through `tx`, prints `admitted`, and never answers: the test then stops the
 * process (SIGSTOP), its transaction still open.
 *
 * Arguments: the server URL, the schema (migrated by the test), the key, the lease in ms.
 */
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';

const [url = '', schema = '', key = '', leaseMs = ''] = process.argv.slice(2);
const store = postgresKeyStore({ connectionString: url, schema });
// Keeps the process alive while the work waits for an answer that never comes.
setInterval(() => undefined, 60_000);
await store.admit(
  { clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: Number(leaseMs), ttlMs: 86_400_000 },
  {
    async work(tx) {
      await tx.run('INSERT INTO notes (note) VALUES ($1)', ['frozen']);
      console.log('admitted');
      return new Promise<never>(() => undefined);
    },
    response: () => ({ status: 201, headers: {}, body: '{"by":"frozen"}' }),
  },
);

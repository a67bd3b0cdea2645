/**
 * Child process of postgres-frozen.test.ts: holds one key on PostgreSQL inside an open
 * transaction whose work writes a note through `tx`, prints `admitted`, and never answers: the
 * test then stops the process (SIGSTOP), its transaction still open. Modes: `whole` (a whole
 * request: the key's INSERT unseen), `first` (a first phase in the admission's transaction: the
 * same), `phase` (a committed admission, then a phase's transaction holding the row's lock).
 *
 * Arguments: the server URL, the schema (migrated by the test), the key, the lease in ms, the mode.
 */
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import type { Tx } from '../../../src/server/store/types.js';
import { runWholeRequest } from '../../../src/server/store/request-transaction.js';

const [url = '', schema = '', key = '', lease = '', mode = 'whole'] = process.argv.slice(2);
const leaseMs = Number(lease);
const store = postgresKeyStore({ connectionString: url, schema });
// Keeps the process alive while the work waits for an answer that never comes.
setInterval(() => undefined, 60_000);
const input = { clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs, ttlMs: 86_400_000 };
async function work(tx: Tx): Promise<never> {
  await tx.run('INSERT INTO notes (note) VALUES ($1)', ['frozen']);
  console.log('admitted');
  return new Promise<never>(() => undefined);
}
if (mode === 'whole') {
  await runWholeRequest(store, input, { work, response: () => ({ status: 201, headers: {}, body: '{"by":"frozen"}' }) });
} else if (mode === 'first') {
  await store.admit(input, { phase: { recoveryPoint: 'H1_DONE', leaseMs }, work });
} else {
  const admitted = await store.admit(input);
  if (!admitted.owned) throw new Error('the key was not new');
  await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs }, work);
}

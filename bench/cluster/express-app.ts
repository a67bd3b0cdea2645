/**
 * An Express payments app as a user writes one with oncely: `express.json()`, then
 * `idempotent({ store, transaction: true })` over the PostgreSQL key store, then a handler that
 * writes its payment and its ledger entry through `req.oncely.tx` — so both commit with the
 * stored response, or neither does.
 *
 * Run as its own process by the cluster run: `node --import tsx bench/cluster/express-app.ts
 * <db-url> <schema>`; prints `listening on http://127.0.0.1:PORT` once it serves.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { idempotent } from '../../src/server/middleware/express.js';
import { postgresKeyStore } from '../../src/server/postgres.js';

const [url, schema] = process.argv.slice(2);
if (!url || !schema) throw new Error('usage: express-app.ts <postgres-url> <schema>');

const DDL =
  'CREATE TABLE IF NOT EXISTS payments (key text NOT NULL, id text NOT NULL, amount int NOT NULL); ' +
  'CREATE TABLE IF NOT EXISTS ledger (key text NOT NULL, payment_id text NOT NULL, amount int NOT NULL)';

const store = postgresKeyStore({ connectionString: url, schema, connectTimeoutMs: 2000 });
// The cluster may still be electing when the app starts: migrate until it can.
for (let tries = 0; ; tries += 1) {
  try {
    await store.migrate({ sqlite: '', postgres: DDL });
    break;
  } catch (error) {
    if (tries > 60) throw error;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const app = express();
app.use(express.json());
app.post('/v1/payments', idempotent({ store, transaction: true, clientId: () => 'acme', leaseMs: 5000 }), async (req, res, next) => {
  try {
    const tx = req.oncely!.tx!;
    const id = randomUUID();
    const amount = Number((req.body as { amount: number }).amount);
    await tx.run('INSERT INTO payments (key, id, amount) VALUES ($1, $2, $3)', [req.oncely!.key, id, amount]);
    await tx.run('INSERT INTO ledger (key, payment_id, amount) VALUES ($1, $2, $3)', [req.oncely!.key, id, amount]);
    res.status(201).json({ id, amount, status: 'succeeded' });
  } catch (error) {
    next(error);
  }
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => {
  server.close();
  void store.close().finally(() => process.exit(0));
});

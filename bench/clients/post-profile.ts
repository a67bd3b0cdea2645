/**
 * A loop of `post()` calls against a local reference server, for `node --cpu-prof`: the
 * profile shows where the client's own CPU goes per operation.
 *
 * Usage: `node --import tsx --cpu-prof --cpu-prof-dir /tmp/prof bench/clients/post-profile.ts [ops]`
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../../src/index.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { TSX, startServer } from '../lib/proc.js';

const ops = Number(process.argv[2] ?? 3000);
const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-profile-'));
const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet']);
const client = createClient({ baseUrl: server.url, headers: { authorization: 'Bearer test_acme' }, journal: sqliteJournal({ path: join(dir, 'j.db') }) });
const started = performance.now();
for (let i = 0; i < ops; i += 1) await client.post('v1/payments', { json: { amount: 100 + (i % 1000), currency: 'EUR', reference: `prof-${i}` } });
console.log(`${ops} posts, ${((performance.now() - started) / ops).toFixed(3)} ms each`);
await client.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
const mk = (name: string, ddl: string) => { const db = new Database(join(dir, name + '.db')); db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL'); db.exec(ddl); return db; };
const base = `CREATE TABLE t (key TEXT PRIMARY KEY NOT NULL, body TEXT, state TEXT, created_at INT, updated_at INT, result TEXT);`;
const dbs = {
  noIndex: mk('a', base),
  pendingIdx: mk('b', base + `CREATE INDEX p ON t (created_at) WHERE state = 'pending';`),
  bothIdx: mk('c', base + `CREATE INDEX p ON t (created_at) WHERE state = 'pending'; CREATE INDEX s ON t (updated_at) WHERE state <> 'pending';`),
};
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'payroll-2026-12-row-1', beneficiary: 'DE89370400440532013000' });
const N = 2000; const res: Record<string, number[]> = {};
let n = 0;
for (let r = 0; r < 6; r++) for (const [name, db] of Object.entries(dbs)) {
  const ins = db.prepare(`INSERT INTO t VALUES (?, ?, 'pending', ?, ?, NULL)`); const up = db.prepare(`UPDATE t SET state = 'succeeded', result = ?, updated_at = ? WHERE key = ?`);
  const c = process.cpuUsage(); const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) { const k = `0193b8a0-0000-7000-8000-${String(n++).padStart(12, '0')}`; ins.run(k, body, Date.now(), Date.now()); up.run('{"status":201}', Date.now(), k); }
  const u = process.cpuUsage(c);
  (res[name] ??= []).push((u.user + u.system) / N);
  (res[name + ' wall'] ??= []).push(Number(process.hrtime.bigint() - t0) / 1000 / N);
}
for (const [name, v] of Object.entries(res)) console.log(name.padEnd(16), v.sort((a, b) => a - b)[3]!.toFixed(1), 'µs/op (put+settle) median');

/**
 * `oncely pending` and `oncely resume` on a journal shared by several services: listing groups
 * by scope, resuming needs a scope (the token goes to that origin only), and a claim left by a
 * killed process does not stop `oncely resume` started right after.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kill, spawnScript, type Child } from '../journal/fixtures/child-process.js';
import { startEffectServer, type EffectServer } from '../journal/fixtures/effect-server.js';
import { runCli } from './helpers/processes.js';

const SCRIPT = fileURLToPath(new URL('../journal/fixtures/scope-child.ts', import.meta.url));

let dir: string;
let journal: string;
let servers: [EffectServer, EffectServer];
const children: Child[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-cli-scope-'));
  journal = join(dir, 'journal.db');
  servers = [await startEffectServer(), await startEffectServer()];
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  for (const server of servers) await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function submit(url: string, count: number, scope = 'billing'): Promise<string[]> {
  const child = spawnScript(SCRIPT, ['submit', url, 'token', scope, 'v1/pay', String(count)], { ONCELY_JOURNAL: journal });
  children.push(child);
  const { keys } = await child.next((e) => e.event === 'submitted', 'the operations to be journaled', 40_000);
  expect(await child.exited).toBe(0);
  return keys as string[];
}

describe('oncely pending and resume with several scopes in one journal', () => {
  it('lists every scope, grouped, or one scope with --url and --scope', async () => {
    const [a, b] = servers;
    const keysA = await submit(a.url, 2);
    const keysB = await submit(b.url, 1);
    const keysPayroll = await submit(a.url, 1, 'payroll');

    const all = await runCli(['pending', '--journal', journal]);
    expect(all.code).toBe(0);
    const headings = all.stdout.split('\n').filter((line) => line.startsWith('http://'));
    expect(headings.sort()).toEqual([`${a.url}#billing`, `${a.url}#payroll`, `${b.url}#billing`].sort());
    expect(all.stdout).toContain('4 pending operations');
    expect(all.stdout).toContain('(3 scopes)');

    const json = await runCli(['pending', '--journal', journal, '--url', `${a.url}/ignored/path`, '--scope', 'billing', '--json']);
    expect((JSON.parse(json.stdout) as Array<{ key: string; scope: string }>).map((row) => [row.scope, row.key])).toEqual(
      keysA.map((key) => [`${a.url}#billing`, key]),
    );
    const payroll = await runCli(['pending', '--journal', journal, '--url', a.url, '--scope', 'payroll', '--json']);
    expect((JSON.parse(payroll.stdout) as Array<{ key: string }>).map((row) => row.key)).toEqual(keysPayroll);
    expect(keysB).toHaveLength(1);
  }, 60_000);

  it('refuses to resume without --url, and resumes only the named scope with it', async () => {
    const [a, b] = servers;
    const keysA = await submit(a.url, 2);
    await submit(b.url, 1);

    const refused = await runCli(['resume', '--journal', journal, '--token', 'tok']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--url is required');
    expect(a.attempts.length + b.attempts.length).toBe(0);

    const resumed = await runCli(['resume', '--journal', journal, '--url', a.url, '--scope', 'billing', '--token', 'tok-a', '--json']);
    expect(resumed.code).toBe(0);
    expect((JSON.parse(resumed.stdout) as Array<{ key: string; state: string }>).map((line) => [line.key, line.state]).sort()).toEqual(
      keysA.map((key) => [key, 'succeeded']).sort(),
    );
    expect(a.attempts.map((attempt) => attempt.process)).toEqual(['tok-a', 'tok-a']);
    expect(b.attempts).toEqual([]);
    const left = await runCli(['pending', '--journal', journal, '--json']);
    expect((JSON.parse(left.stdout) as Array<{ scope: string }>).map((row) => row.scope)).toEqual([`${b.url}#billing`]);
  }, 60_000);

  it('finishes, at once, an operation whose process was killed mid-request', async () => {
    const [a] = servers;
    const owner = spawnScript(SCRIPT, ['send', a.url, 'token', 'billing', 'v1/hold'], { ONCELY_JOURNAL: journal });
    children.push(owner);
    const { key } = await owner.next((e) => e.event === 'journaled', 'the operation to be journaled', 40_000);
    await a.until(() => a.attempts.length === 1, 'the held attempt');
    await kill(owner);

    const resumed = await runCli(['resume', '--journal', journal, '--url', a.url, '--scope', 'billing', '--token', 'token']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`${String(key)}  succeeded`);
    expect(a.effects.get(key as string)).toBe(1);
  }, 60_000);
});

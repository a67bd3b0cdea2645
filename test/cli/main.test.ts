import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/cli/version.js';
import { runCli } from './helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-cli-main-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

describe('oncely --version', () => {
  it('prints the version of package.json for --version and -v, and exits 0', async () => {
    const [long, short] = await Promise.all([runCli(['--version']), runCli(['-v'])]);
    for (const run of [long, short]) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${manifest.version}\n`);
    }
  });

  it('finds the nearest package.json named oncely from a built dist/, passing over one of another name', () => {
    const root = join(dir, 'installed');
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'oncely', version: '9.8.7' }));
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    expect(packageVersion(pathToFileURL(join(root, 'dist', 'cli', 'main.js')))).toBe('9.8.7');
    expect(packageVersion(pathToFileURL(join(dir, 'elsewhere', 'main.js')))).toBeUndefined();
  });
});

describe('oncely with no command, or an unknown one', () => {
  it('prints the usage on stdout for --help (exit 0) and on stderr without a command (exit 2)', async () => {
    const [help, none] = await Promise.all([runCli(['--help']), runCli([])]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: oncely <command>/);
    expect(help.stdout).toMatch(/-v, --version {2}print the version of oncely/);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^usage: oncely <command>/);
  });

  it('suggests the nearest command for a mistyped one and exits 2', async () => {
    const [typo, far, proto] = await Promise.all([runCli(['pendng']), runCli(['frobnicate']), runCli(['constructor'])]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^oncely: unknown command "pendng"; did you mean pending\?$/m);
    expect(far.code).toBe(2);
    expect(far.stderr).toMatch(/^oncely: unknown command "frobnicate"$/m);
    expect(far.stderr).toContain('commands:');
    // A name every object has is no command either.
    expect(proto.code).toBe(2);
    expect(proto.stderr).toMatch(/unknown command "constructor"/);
  });

  it('suggests --version for a mistyped top-level option and exits 2', async () => {
    const run = await runCli(['--verison']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^oncely: unknown option --verison; did you mean --version\?$/m);
  });
});

describe('one exit-code convention for every command: 0 success, 1 failure, 2 usage error', () => {
  const missing = (name: string): string => join(dir, 'missing', name);
  const commands = ['demo', 'serve', 'upload', 'pending', 'resume', 'conform'] as const;

  it.each(commands)('oncely %s --help prints its help on stdout and exits 0', async (command) => {
    const run = await runCli([command, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^usage: oncely ${command} `));
    expect(run.stderr).toBe('');
  });

  it.each([
    ['demo', ['--payments', 'lots'], /--payments must be an integer/],
    ['serve', ['--db', join(dir, 'never.db'), '--port', 'http'], /--port must be an integer/],
    ['upload', ['--url', 'http://127.0.0.1:9/v1/payments', '--token', 't'], /give the CSV file to upload/],
    [
      'upload',
      ['payroll.csv', '--url', 'http://127.0.0.1:9/v1/payments', '--token', 't\nx'],
      /--token \(or \$ONCELY_TOKEN\) cannot be sent in an Authorization header/,
    ],
    ['pending', ['--scope', 'billing'], /--scope needs --url/],
    ['resume', ['--journal', missing('journal.db'), '--token', 't'], /--url is required/],
    ['conform', ['http://127.0.0.1:9/v1/payments', '--body', '{"amount":1}'], /--body holds no \{\{unique\}\}/],
  ] as const)('oncely %s exits 2 for a usage error, with the problem on stderr', async (command, args, message) => {
    const run = await runCli([command, ...args]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^oncely ${command}: `));
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain(`Run \`oncely ${command} --help\` for its options.`);
  });

  it.each([
    ['serve', ['--port', '0', '--db', join(dir, 'never.db'), '--clients', missing('clients.json')], /--clients .*ENOENT|no such file/],
    ['upload', [missing('payroll.csv'), '--url', 'http://127.0.0.1:9/v1/payments', '--token', 't', '--journal', join(dir, 'upload.db')], /cannot read/],
    ['pending', ['--journal', missing('journal.db')], /no journal at/],
    ['resume', ['--journal', missing('journal.db'), '--url', 'http://127.0.0.1:9', '--token', 't'], /no journal at/],
  ] as const)('oncely %s exits 1 for a failure, with the reason on stderr', async (command, args, message) => {
    const run = await runCli([command, ...args]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^oncely ${command}: `));
    expect(run.stderr).toMatch(message);
  });

  it('exits 1 with the error message, not a stack trace, when a command meets a damaged journal', async () => {
    const path = join(dir, 'damaged.db');
    writeFileSync(path, 'not a database, only text long enough to be read as a header of some kind\n'.repeat(20));
    const run = await runCli(['pending', '--journal', path]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^oncely pending: the journal file is damaged/);
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});

import { describe, expect, it } from 'vitest';
import { parseDuration, readDuration } from '../../src/cli/args.js';
import { closest } from '../../src/cli/suggest.js';
import { runCli } from './helpers/processes.js';

describe('unknown options', () => {
  it.each([
    ['resume', '--tokn', '--token'],
    ['demo', '--payment', '--payments'],
    ['serve', '--quite', '--quiet'],
    ['upload', '--dryrun', '--dry-run'],
    ['pending', '--jsno', '--json'],
  ])('oncely %s %s suggests %s and exits 2, in place of parseArgs text', async (command, typo, meant) => {
    const run = await runCli([command, typo]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^oncely ${command}: unknown option ${typo}; did you mean ${meant}\\?$`, 'm'));
    expect(run.stderr).not.toContain('To specify a positional argument');
    expect(run.stdout).toBe('');
  });

  it('names an option that is near no other without guessing', async () => {
    const run = await runCli(['serve', '--colour']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^oncely serve: unknown option --colour$/m);
  });

  it('says which option lacks its value and which takes none', async () => {
    const [missing, extra, swallowed] = await Promise.all([
      runCli(['pending', '--url']),
      runCli(['pending', '--json=yes']),
      runCli(['resume', '--url', '--token', 't']),
    ]);
    expect([missing.code, extra.code, swallowed.code]).toEqual([2, 2, 2]);
    expect(missing.stderr).toMatch(/^oncely pending: --url needs a value$/m);
    expect(extra.stderr).toMatch(/^oncely pending: --json takes no value$/m);
    expect(swallowed.stderr).toMatch(/^oncely resume: --url needs a value, got the option --token/m);
  });

  it('suggests by edit distance, an adjacent swap counting as one edit, or by a unique prefix', () => {
    expect(closest('tokn', ['url', 'token', 'journal'])).toBe('token');
    expect(closest('jsno', ['journal', 'json'])).toBe('json');
    expect(closest('recovery', ['reaper-interval', 'recovery-interval'])).toBe('recovery-interval');
    expect(closest('colour', ['port', 'host', 'clients'])).toBeUndefined();
    expect(closest('x', ['db', 'url'])).toBeUndefined();
  });
});

describe('--help', () => {
  it.each(['demo', 'serve', 'upload', 'pending', 'resume'])('oncely %s --help lines every description up two spaces past its longest flag', async (command) => {
    const run = await runCli([command, '--help']);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    const rows = lines
      .slice(lines.indexOf('options:') + 1)
      .filter((line) => line !== '')
      .map((line) => {
        // A flag is `--name` and at most one placeholder word; the description follows the padding.
        const [, flag = '', help = ''] = /^ {2}(--[a-z-]+(?: \S+)?) +(\S.*)$/.exec(line) ?? [];
        expect(flag, line).not.toBe('');
        return { flag, column: line.length - help.length };
      });
    const longest = Math.max(...rows.map((row) => row.flag.length));
    expect(new Set(rows.map((row) => row.column))).toEqual(new Set([2 + longest + 2]));
    expect(rows.at(-1)?.flag).toBe('--help');
  });
});

describe('--token help', () => {
  it.each(['upload', 'resume'])('oncely %s --help says the token is never journaled and why $ONCELY_TOKEN is the safer way to give it', async (command) => {
    const run = await runCli([command, '--help']);
    expect(run.stdout).toMatch(
      /^ {2}--token TOKEN +bearer token, never journaled \(default: \$ONCELY_TOKEN, which is safer: other users can see a flag in ps\)$/m,
    );
  });
});

describe('durations', () => {
  it('reads 500ms, 90s, 15m, 24h, 7d and a bare 0 into milliseconds, and nothing else', () => {
    expect(['500ms', '90s', '15m', '24h', '7d', '1.5m', '0'].map(parseDuration)).toEqual([500, 90_000, 900_000, 86_400_000, 604_800_000, 90_000, 0]);
    expect(['10', '24 h', 'h', '-1s', '1w', ''].map(parseDuration)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  it('reads a bare whole number as hours only where asked to', () => {
    expect(readDuration('key-ttl', '48', { fallback: '24h', bareHours: true })).toEqual({ ok: true, value: 172_800_000 });
    expect(readDuration('key-ttl', undefined, { fallback: '24h', bareHours: true })).toEqual({ ok: true, value: 86_400_000 });
    expect(readDuration('key-ttl', '48', { fallback: '24h' })).toMatchObject({ ok: false, problem: expect.stringMatching(/^--key-ttl must be a duration/) });
    expect(readDuration('key-ttl', '1.5', { fallback: '24h', bareHours: true })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/or a whole number of hours; got "1.5"/),
    });
  });
});

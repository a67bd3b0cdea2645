/**
 * The small argument parser every `oncely` command shares: `node:util`'s `parseArgs` in strict
 * mode, plus generated `--help` text and typed readers for numbers, durations and lists, so each
 * command states its options once and never hand-parses `process.argv`.
 *
 * Parsing never throws and never exits: a bad flag becomes a {@link ParsedArgs} with
 * `ok: false` and the exit code `2` (the Unix convention for a usage error), and the command
 * decides what to print. Every command keeps one exit-code convention: 0 success, 1 failure,
 * 2 usage error.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { closest } from './suggest.js';
import { checkHeaders } from '../client/request.js';

/** One option of a command: a `parseArgs` option plus the line shown by `--help`. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** One-line description for `--help`. */
  readonly help: string;
  /** Placeholder shown after the flag in `--help`, e.g. `N` or `PATH`. */
  readonly value?: string;
  readonly short?: string;
  /** A string option that may be given several times: its value is every occurrence, in order. */
  readonly multiple?: true;
}

/** What a command accepts. */
export interface CommandSpec<Options extends Readonly<Record<string, OptionSpec>>> {
  /** `oncely <name>`. */
  readonly name: string;
  /** The positional part of the synopsis, e.g. `FILE.csv`; omit when the command takes none. */
  readonly positionals?: string;
  /** One paragraph shown under the synopsis. */
  readonly description: string;
  readonly options: Options;
}

/** The values of a command's options: strings or booleans, absent when not given. */
export type OptionValues<Options extends Readonly<Record<string, OptionSpec>>> = {
  readonly [Name in keyof Options]?: Options[Name]['type'] extends 'boolean'
    ? boolean
    : Options[Name] extends { readonly multiple: true }
      ? readonly string[]
      : string;
};

/** The outcome of {@link parseCommandArgs}. */
export type ParsedArgs<Options extends Readonly<Record<string, OptionSpec>>> =
  | { readonly ok: true; readonly values: OptionValues<Options>; readonly positionals: readonly string[] }
  /** `--help` (exit code 0, text on stdout) or a usage error (exit code 2, text on stderr). */
  | { readonly ok: false; readonly exitCode: 0 | 2; readonly message: string };

/**
 * Renders a command's `--help` text.
 *
 * @example
 * ```ts
 * console.log(helpText({ name: 'pending', description: 'List pending operations.', options: {} }));
 * ```
 */
export function helpText<Options extends Readonly<Record<string, OptionSpec>>>(spec: CommandSpec<Options>): string {
  const rows: Array<readonly [string, string]> = Object.entries(spec.options).map(([name, option]) => [
    `--${name}${option.value ? ` ${option.value}` : ''}`,
    option.help,
  ]);
  rows.push(['--help', 'show this help']);
  // The flag column is as wide as this command's longest flag, so every description lines up.
  const width = Math.max(...rows.map(([flag]) => flag.length));
  const synopsis = `usage: oncely ${spec.name}${spec.positionals ? ` ${spec.positionals}` : ''} [options]`;
  return [synopsis, '', spec.description, '', 'options:', ...rows.map(([flag, help]) => `  ${flag.padEnd(width)}  ${help}`)].join('\n');
}

/**
 * Parses `argv` against a command's options (strictly: an unknown flag is a usage error).
 *
 * @example
 * ```ts
 * const parsed = parseCommandArgs(['--payments', '200'], {
 *   name: 'demo', description: 'Run the demo.',
 *   options: { payments: { type: 'string', value: 'N', help: 'payments to make' } },
 * });
 * if (parsed.ok) parsed.values.payments; // '200'
 * ```
 */
export function parseCommandArgs<Options extends Readonly<Record<string, OptionSpec>>>(
  argv: readonly string[],
  spec: CommandSpec<Options>,
): ParsedArgs<Options> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, option] of Object.entries(spec.options)) {
    options[name] = {
      type: option.type,
      ...(option.short === undefined ? {} : { short: option.short }),
      ...(option.multiple === undefined ? {} : { multiple: true }),
    };
  }
  const problem = optionProblem(argv, options);
  if (problem !== undefined) return usageError(spec, problem);
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
    if (values['help'] === true) return { ok: false, exitCode: 0, message: helpText(spec) };
    const maxPositionals = spec.positionals ? spec.positionals.split(' ').length : 0;
    if (positionals.length > maxPositionals) {
      return usageError(spec, `unexpected argument ${JSON.stringify(positionals[maxPositionals])}`);
    }
    return { ok: true, values: values as OptionValues<Options>, positionals };
  } catch (error) {
    // A backstop only: optionProblem has already found every mistake parseArgs reports.
    return usageError(spec, error instanceof Error ? error.message : String(error));
  }
}

/**
 * The first mistake in `argv` that strict `parseArgs` would refuse, said in oncely's words
 * (`unknown option --tokn; did you mean --token?`) rather than in `parseArgs`' own, which tell
 * a user to put `--tokn` after `--` as a positional.
 */
function optionProblem(argv: readonly string[], options: Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>): string | undefined {
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (option === undefined) {
      const near = closest(token.name, Object.keys(options));
      return `unknown option ${token.rawName}${near === undefined ? '' : `; did you mean --${near}?`}`;
    }
    if (option.type === 'boolean' && token.value !== undefined) return `${token.rawName} takes no value`;
    if (option.type === 'string' && token.value === undefined) return `${token.rawName} needs a value`;
    if (option.type === 'string' && !token.inlineValue && token.value?.startsWith('-')) {
      return `${token.rawName} needs a value, got the option ${token.value} (write ${token.rawName}=${token.value} if that is the value)`;
    }
  }
  return undefined;
}

/**
 * Builds the usage-error outcome of a command, for checks `parseArgs` cannot make itself
 * (a missing positional, a number out of range).
 *
 * @example
 * ```ts
 * return usageError(spec, 'give the CSV file to upload');
 * ```
 */
export function usageError<Options extends Readonly<Record<string, OptionSpec>>>(
  spec: CommandSpec<Options>,
  problem: string,
): { readonly ok: false; readonly exitCode: 2; readonly message: string } {
  return { ok: false, exitCode: 2, message: `oncely ${spec.name}: ${problem}\nRun \`oncely ${spec.name} --help\` for its options.` };
}

/**
 * The outcome of reading one option's value: the value, or what is wrong with it (to be passed
 * to {@link usageError}).
 *
 * @example
 * ```ts
 * const payments: ReadResult<number> = readInteger('payments', '200', 500, 1);
 * if (!payments.ok) return reportParseFailure(usageError(spec, payments.problem));
 * ```
 */
export type ReadResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

/**
 * Why a bearer token cannot be sent at all (a line break, a control or non-Latin-1 character), or
 * `undefined`: a `--token` that cannot is a usage error, before any row is journaled or sent.
 *
 * @example
 * ```ts
 * tokenProblem('tok_live_1'); // undefined
 * ```
 */
export function tokenProblem(token: string): string | undefined {
  return checkHeaders({ authorization: `Bearer ${token}` }) === undefined
    ? undefined
    : '--token (or $ONCELY_TOKEN) cannot be sent in an Authorization header: it holds a line break, a control character or a character outside Latin-1';
}

/**
 * Reads an integer option: `fallback` when absent, an error message when not an integer in
 * `[min, max]`.
 *
 * @example
 * ```ts
 * readInteger('concurrency', '8', 8, 1, 1024); // { ok: true, value: 8 }
 * readInteger('concurrency', 'x', 8, 1, 1024); // { ok: false, problem: '--concurrency must be ...' }
 * ```
 */
export function readInteger(name: string, raw: string | undefined, fallback: number, min: number, max: number = Number.MAX_SAFE_INTEGER): ReadResult<number> {
  if (raw === undefined) return { ok: true, value: fallback };
  const value = /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    return { ok: false, problem: `--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}` };
  }
  return { ok: true, value };
}

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * Parses a duration, a number with a unit (`500ms`, `90s`, `1.5m`, `24h`, `7d`) or a bare `0`,
 * into milliseconds; `undefined` when `text` is not one.
 *
 * @example
 * ```ts
 * parseDuration('24h'); // 86400000
 * parseDuration('10');  // undefined: a unit is required
 * ```
 */
export function parseDuration(text: string): number | undefined {
  if (text.trim() === '0') return 0;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  // The pattern admits only the units of DURATION_UNITS.
  return Math.round(Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS]);
}

/**
 * How {@link readDuration} reads one option.
 *
 * @example
 * ```ts
 * const ttl: DurationOptions = { fallback: '24h', bareHours: true };
 * ```
 */
export interface DurationOptions {
  /** The value when the option is absent, as a duration, e.g. `'24h'`. */
  readonly fallback: string;
  /**
   * Also accept a bare whole number, as hours: the syntax `--key-ttl` had on `pending` and
   * `resume` before every command took durations. Unambiguous there, since those commands never
   * read a bare number any other way; `serve` keeps refusing one (`--lease 10` is an error, not
   * 10 hours).
   *
   * @default false
   */
  readonly bareHours?: boolean;
}

/**
 * Reads a duration option (see {@link parseDuration}) into milliseconds: `options.fallback`
 * when absent, a problem when it is not a duration.
 *
 * @example
 * ```ts
 * readDuration('key-ttl', '7d', { fallback: '24h' });                  // { ok: true, value: 604800000 }
 * readDuration('key-ttl', '48', { fallback: '24h', bareHours: true }); // { ok: true, value: 172800000 }
 * readDuration('lease', '10', { fallback: '10s' });                    // { ok: false, problem: '--lease must be a duration ...' }
 * ```
 */
export function readDuration(name: string, raw: string | undefined, options: DurationOptions): ReadResult<number> {
  const text = (raw ?? options.fallback).trim();
  const ms = options.bareHours === true && /^\d+$/.test(text) ? Number(text) * DURATION_UNITS.h : parseDuration(text);
  if (ms === undefined || !Number.isSafeInteger(ms)) {
    const bare = options.bareHours === true ? ', or a whole number of hours' : '';
    return { ok: false, problem: `--${name} must be a duration such as 500ms, 90s, 15m, 24h or 7d${bare}; got ${JSON.stringify(raw ?? options.fallback)}` };
  }
  return { ok: true, value: ms };
}

/**
 * Reads a comma-separated list option (`a,b,c`), trimming blanks; `fallback` when absent.
 *
 * @example
 * ```ts
 * readList('client_ref, operation ,value_date', []); // ['client_ref', 'operation', 'value_date']
 * ```
 */
export function readList(raw: string | undefined, fallback: readonly string[]): readonly string[] {
  if (raw === undefined) return fallback;
  return raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

/**
 * Prints a failed parse where it belongs (help on stdout, errors on stderr) and returns its
 * exit code, so a command can end with `return reportParseFailure(parsed)`.
 *
 * @example
 * ```ts
 * const parsed = parseCommandArgs(argv, spec);
 * if (!parsed.ok) return reportParseFailure(parsed);
 * ```
 */
export function reportParseFailure(parsed: { readonly exitCode: 0 | 2; readonly message: string }): number {
  if (parsed.exitCode === 0) console.log(parsed.message);
  else console.error(parsed.message);
  return parsed.exitCode;
}

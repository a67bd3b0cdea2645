/**
 * The small argument parser every `oncely` command shares: `node:util`'s `parseArgs` in strict
 * mode, plus generated `--help` text and typed readers for numbers and lists, so each command
 * states its options once and never hand-parses `process.argv`.
 *
 * Parsing never throws and never exits: a bad flag becomes a {@link ParsedArgs} with
 * `ok: false` and the exit code `2` (the Unix convention for a usage error), and the command
 * decides what to print.
 *
 * @module
 */
import { parseArgs } from 'node:util';

/** One option of a command: a `parseArgs` option plus the line shown by `--help`. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** One-line description for `--help`. */
  readonly help: string;
  /** Placeholder shown after the flag in `--help`, e.g. `N` or `PATH`. */
  readonly value?: string;
  readonly short?: string;
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
  readonly [Name in keyof Options]?: Options[Name]['type'] extends 'boolean' ? boolean : string;
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
  const flags = Object.entries(spec.options).map(([name, option]) => {
    const flag = `--${name}${option.value ? ` ${option.value}` : ''}`;
    return `  ${flag.padEnd(26)} ${option.help}`;
  });
  const synopsis = `usage: oncely ${spec.name}${spec.positionals ? ` ${spec.positionals}` : ''} [options]`;
  return [synopsis, '', spec.description, '', 'options:', ...flags, `  ${'--help'.padEnd(26)} show this help`].join('\n');
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
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, option] of Object.entries(spec.options)) {
    options[name] = option.short === undefined ? { type: option.type } : { type: option.type, short: option.short };
  }
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
    if (values['help'] === true) return { ok: false, exitCode: 0, message: helpText(spec) };
    const maxPositionals = spec.positionals ? spec.positionals.split(' ').length : 0;
    if (positionals.length > maxPositionals) {
      return usageError(spec, `unexpected argument ${JSON.stringify(positionals[maxPositionals])}`);
    }
    return { ok: true, values: values as OptionValues<Options>, positionals };
  } catch (error) {
    return usageError(spec, error instanceof Error ? error.message : String(error));
  }
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
 * Reads an integer option: `fallback` when absent, an error message when not an integer in
 * `[min, max]`.
 *
 * @example
 * ```ts
 * readInteger('concurrency', '8', 8, 1, 1024); // { ok: true, value: 8 }
 * readInteger('concurrency', 'x', 8, 1, 1024); // { ok: false, problem: '--concurrency must be ...' }
 * ```
 */
export function readInteger(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
): { readonly ok: true; readonly value: number } | { readonly ok: false; readonly problem: string } {
  if (raw === undefined) return { ok: true, value: fallback };
  const value = /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    return { ok: false, problem: `--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}` };
  }
  return { ok: true, value };
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

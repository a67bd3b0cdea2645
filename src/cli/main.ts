/**
 * The `oncely` command line: `oncely <command> [options]`.
 *
 * Each command lives in its own module and is loaded on demand, so `oncely upload` never
 * loads the server and `oncely serve` never loads the uploader.
 *
 * @module
 */
import { pathToFileURL } from 'node:url';
import { isOncelyError } from '../errors.js';
import { closest } from './suggest.js';
import { packageVersion } from './version.js';

/** A command: resolves to the process exit code. */
export type Command = (argv: readonly string[]) => Promise<number>;

const commands: Record<string, { readonly summary: string; readonly load: () => Promise<Command> }> = {
  serve: { summary: 'run the reference payments server', load: async () => (await import('./serve.js')).serve },
  demo: { summary: 'run the exactly-once chaos demo and verify the ledger', load: async () => (await import('./demo.js')).demo },
  upload: { summary: 'upload a CSV file, one idempotent POST per row', load: async () => (await import('./upload.js')).upload },
  pending: { summary: 'list the pending operations of a journal', load: async () => (await import('./journal-commands.js')).pending },
  resume: { summary: 'send the pending operations of a journal again', load: async () => (await import('./journal-commands.js')).resume },
  conform: { summary: "check an HTTP endpoint's Idempotency-Key behaviour from the outside", load: async () => (await import('./conform.js')).conform },
};

function usage(): string {
  const commandRows = Object.entries(commands).map(([name, { summary }]) => [name, summary] as const);
  const optionRows = [
    ['-v, --version', 'print the version of oncely'],
    ['-h, --help', 'show this help'],
  ] as const;
  const width = Math.max(...[...commandRows, ...optionRows].map(([name]) => name.length));
  const render = (rows: ReadonlyArray<readonly [string, string]>): string[] => rows.map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`);
  return [
    'usage: oncely <command> [options]',
    '',
    'commands:',
    ...render(commandRows),
    '',
    'options:',
    ...render(optionRows),
    '',
    'Run `oncely <command> --help` for its options.',
  ].join('\n');
}

/** The top-level mistake in `name`, said with the nearest thing it may have meant. */
function unknown(name: string): string {
  if (name.startsWith('-')) {
    const near = closest(name.replace(/^--?/, ''), ['help', 'version']);
    return `oncely: unknown option ${name}${near === undefined ? '' : `; did you mean --${near}?`}\nRun \`oncely --help\` for the commands.`;
  }
  const near = closest(name, Object.keys(commands));
  if (near === undefined) return `oncely: unknown command ${JSON.stringify(name)}\n\n${usage()}`;
  return `oncely: unknown command ${JSON.stringify(name)}; did you mean ${near}?\nRun \`oncely --help\` for the commands.`;
}

/**
 * Runs the CLI with `argv` (without the node and script paths). Resolves with the exit code
 * every command keeps to: 0 success, 1 failure, 2 usage error.
 *
 * @example
 * ```ts
 * process.exitCode = await main(['demo', '--payments', '200']);
 * ```
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.error(usage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return 0;
  }
  if (name === '--version' || name === '-v') {
    const version = packageVersion();
    if (version === undefined) {
      console.error('oncely: no package.json named "oncely" above the CLI, so no version to print');
      return 1;
    }
    console.log(version);
    return 0;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (command === undefined) {
    console.error(unknown(name));
    return 2;
  }
  try {
    return await (
      await command.load()
    )(rest);
  } catch (error) {
    // Whatever a command did not handle is a failure (1), not a crash dump: an OncelyError (a
    // damaged journal, say) or a system error (ENOENT, EACCES) says in its message what happened;
    // anything else is a bug, and its stack is what a bug report needs.
    console.error(`oncely ${name}: ${describeFailure(error)}`);
    return 1;
  }
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const systemError = typeof (error as NodeJS.ErrnoException).syscall === 'string';
  return isOncelyError(error) || systemError ? error.message : (error.stack ?? error.message);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}

/**
 * The `oncely` command line: `oncely <command> [options]`.
 *
 * Each command lives in its own module and is loaded on demand, so `oncely upload` never
 * loads the server and `oncely serve` never loads the uploader.
 *
 * @module
 */
import { pathToFileURL } from 'node:url';

/** A command: resolves to the process exit code. */
export type Command = (argv: readonly string[]) => Promise<number>;

const commands: Record<string, { readonly summary: string; readonly load: () => Promise<Command> }> = {
  serve: { summary: 'run the reference payments server', load: async () => (await import('./serve.js')).serve },
  demo: { summary: 'run the exactly-once chaos demo and verify the ledger', load: async () => (await import('./demo.js')).demo },
  upload: { summary: 'upload a CSV file, one idempotent POST per row', load: async () => (await import('./upload.js')).upload },
  pending: { summary: 'list the pending operations of a journal', load: async () => (await import('./journal-commands.js')).pending },
  resume: { summary: 'send the pending operations of a journal again', load: async () => (await import('./journal-commands.js')).resume },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, { summary }]) => `  ${name.padEnd(8)} ${summary}`);
  return ['usage: oncely <command> [options]', '', 'commands:', ...lines, '', 'Run `oncely <command> --help` for its options.'].join('\n');
}

/**
 * Runs the CLI with `argv` (without the node and script paths).
 *
 * @example
 * ```ts
 * process.exitCode = await main(['demo', '--payments', '200']);
 * ```
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (!command) {
    console.error(`oncely: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
    return 2;
  }
  return (await command.load())(rest);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}

/**
 * `oncely upload`'s command line: its options, and the settings of one run resolved from them
 * once (a usage error names the option and sends nothing).
 *
 * @module
 */
import { deriveKey } from '../keys.js';
import { parseCommandArgs, readInteger, readList, tokenProblem, usageError } from './args.js';
import type { FileSettings } from './upload-file.js';
import { DEFAULT_KEY_COLUMNS } from './upload-rows.js';

const spec = {
  name: 'upload',
  positionals: 'FILE.csv',
  description:
    "POST every row of a CSV file exactly once. Each row's key is derived from its key columns, so running the same " +
    'command again after a crash or Ctrl-C resumes, and resubmitting a finished file changes nothing. ' +
    'Exit code 0 only when every valid row has a final outcome (--dry-run: would be sent) and some row is valid (--strict: every row).',
  options: {
    url: { type: 'string', value: 'URL', help: 'endpoint every row is POSTed to, e.g. http://127.0.0.1:8787/v1/payments' },
    token: { type: 'string', value: 'TOKEN', help: 'bearer token, never journaled (default: $ONCELY_TOKEN, which is safer: other users can see a flag in ps)' },
    concurrency: { type: 'string', value: 'N', help: 'requests in flight at once (default 8)' },
    journal: { type: 'string', value: 'PATH', help: 'journal file (default: $ONCELY_JOURNAL, else ~/.oncely/journal.db)' },
    'key-columns': { type: 'string', value: 'a,b,c', help: `columns the key is derived from (default ${DEFAULT_KEY_COLUMNS.join(',')})` },
    'body-columns': { type: 'string', value: 'x,y', help: 'columns sent as the JSON body (default: every other column)' },
    namespace: { type: 'string', value: 'UUID', help: "uuid5 namespace of the derived keys (default: oncely's)" },
    'dry-run': { type: 'boolean', help: 'check the file and derive the keys; send and journal nothing' },
    strict: { type: 'boolean', help: 'exit 1 when any row is invalid (default: only when no row is valid); the valid rows are still sent' },
    report: { type: 'string', value: 'FILE', help: 'also write the final report as JSON to FILE' },
  },
} as const;

/**
 * Settings of one run, resolved once from the arguments.
 *
 * @internal
 */
export interface UploadSettings extends FileSettings {
  readonly url: string | undefined;
  readonly token: string | undefined;
  readonly concurrency: number;
  readonly journalPath: string | undefined;
  readonly dryRun: boolean;
  /** `--strict`: an invalid row fails the run. */
  readonly strict: boolean;
  readonly reportPath: string | undefined;
}

/**
 * The run's settings from the command line, or the usage error (or `--help`) to print.
 *
 * @internal
 */
export function resolveSettings(argv: readonly string[]): { ok: true; settings: UploadSettings } | { ok: false; exitCode: 0 | 2; message: string } {
  const parsed = parseCommandArgs(argv, spec);
  if (!parsed.ok) return parsed;
  const values = parsed.values;
  const file = parsed.positionals[0];
  if (file === undefined) return usageError(spec, 'give the CSV file to upload');
  const dryRun = values['dry-run'] === true;
  const token = values.token ?? process.env['ONCELY_TOKEN'];
  if (!dryRun && values.url === undefined) return usageError(spec, '--url is required (the endpoint every row is POSTed to)');
  if (values.url !== undefined && !URL.canParse(values.url)) return usageError(spec, `--url ${JSON.stringify(values.url)} is not an absolute URL`);
  if (!dryRun && token === undefined) return usageError(spec, '--token (or $ONCELY_TOKEN) is required');
  const unsendable = token === undefined ? undefined : tokenProblem(token);
  if (unsendable !== undefined) return usageError(spec, unsendable);
  const concurrency = readInteger('concurrency', values.concurrency, 8, 1, 1024);
  if (!concurrency.ok) return usageError(spec, concurrency.problem);
  const namespace = values.namespace;
  if (namespace !== undefined) {
    try {
      deriveKey(namespace, 'check');
    } catch {
      return usageError(spec, `--namespace must be a UUID, got ${JSON.stringify(namespace)}`);
    }
  }
  const keyColumns = readList(values['key-columns'], DEFAULT_KEY_COLUMNS);
  if (keyColumns.length === 0) return usageError(spec, '--key-columns needs at least one column');
  const bodyColumns = values['body-columns'] === undefined ? undefined : readList(values['body-columns'], []);
  return {
    ok: true,
    settings: {
      file,
      url: values.url,
      token,
      concurrency: concurrency.value,
      journalPath: values.journal,
      keyColumns,
      bodyColumns,
      namespace,
      dryRun,
      strict: values.strict === true,
      reportPath: values.report,
    },
  };
}

/**
 * The entries a user imports stay small enough to hold in one's head: each exports at most 25
 * names (runtime values and types together), and a name exported by several entries is the same
 * thing in each (`ResumeOutcome` once meant two things). A journal implementer's names live in
 * `oncely/journal`, a key store implementer's in `oncely/server/store`, not on the entries a
 * caller or a server author imports.
 * Counted from the sources with the TypeScript checker, as `tsc` sees each entry's exports.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_NAMES = 25;

/** The client entries: package.json subpath → source file. */
const ENTRIES: Record<string, string> = {
  oncely: 'src/browser.ts',
  'oncely/browser': 'src/browser.ts',
  'oncely/node': 'src/node.ts',
  'oncely/service-worker': 'src/service-worker/index.ts',
  'oncely/react': 'src/react/index.ts',
  'oncely/journal': 'src/journal.ts',
};

/** The server entries: package.json subpath → source file. */
const SERVER_ENTRIES: Record<string, string> = {
  'oncely/server': 'src/server/index.ts',
  'oncely/server/store': 'src/server/store.ts',
  'oncely/server/testing': 'src/server/testing.ts',
  'oncely/server/sqlite': 'src/server/sqlite.ts',
  'oncely/server/postgres': 'src/server/postgres.ts',
  'oncely/server/mysql': 'src/server/mysql.ts',
  'oncely/express': 'src/server/middleware/express.ts',
  'oncely/hono': 'src/server/middleware/hono.ts',
  'oncely/fastify': 'src/server/middleware/fastify.ts',
  'oncely/nestjs': 'src/server/middleware/nestjs.ts',
  'oncely/web': 'src/server/middleware/web.ts',
};

/** The KeyStore contract: what a store of one's own implements, read and writes (not `Tx`: local steps run on it too). */
const KEY_STORE_CONTRACT = [
  'KeyStore',
  'AdmitInput',
  'AdmitResult',
  'AppSchema',
  'BeganRequest',
  'RequestTransaction',
  'Fenced',
  'FirstPhase',
  'KeyRow',
  'KeyState',
  'Lease',
  'PhaseCommit',
  'PointWrite',
  'StoredResponse',
  'WatchEvent',
  'WriteChange',
];

/**
 * The server's errors a user catches by type, on every entry whose functions throw them (or report
 * them to an `onError`): a user imports the class from the entry they already import.
 */
const ERRORS_BY_ENTRY: Record<string, readonly string[]> = {
  'oncely/server': ['InvalidOptionError', 'ResponseTooLargeError'],
  'oncely/server/store': ['ResponseTooLargeError', 'LeaseLostError'],
  'oncely/server/sqlite': ['InvalidOptionError', 'ResponseTooLargeError'],
  'oncely/server/postgres': ['InvalidOptionError', 'ResponseTooLargeError', 'DatabaseSetupError'],
  'oncely/express': ['InvalidOptionError', 'ResponseTooLargeError', 'LeaseExpiredError'],
  'oncely/fastify': ['InvalidOptionError', 'ResponseTooLargeError', 'LeaseExpiredError'],
  'oncely/hono': ['InvalidOptionError', 'ResponseTooLargeError', 'LeaseExpiredError', 'MiddlewareOrderError'],
  'oncely/nestjs': ['InvalidOptionError', 'ResponseTooLargeError', 'LeaseExpiredError', 'MiddlewareOrderError'],
  'oncely/web': ['InvalidOptionError', 'ResponseTooLargeError', 'LeaseExpiredError', 'MiddlewareOrderError'],
};

/** What a store author calls so that the store only runs statements: the write's semantics, and a first phase in an admission. */
const KEY_STORE_HELPERS = ['planWrite', 'admitFirst', 'RowChange'];

const files = [...new Set([...Object.values(ENTRIES), ...Object.values(SERVER_ENTRIES)])].map((file) => join(ROOT, file));
const program = ts.createProgram(files, {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  jsx: ts.JsxEmit.ReactJSX,
  noEmit: true,
  skipLibCheck: true,
});
const checker = program.getTypeChecker();

/** Each exported name of an entry, with the declaration it stands for. */
function exportsOf(file: string): Map<string, ts.Symbol> {
  const source = program.getSourceFile(join(ROOT, file));
  const symbol = source && checker.getSymbolAtLocation(source);
  if (!symbol) throw new Error(`${file}: not a module the checker can read`);
  return new Map(checker.getExportsOfModule(symbol).map((s) => [s.name, s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s]));
}

describe('the client entries', () => {
  it.each(Object.entries(ENTRIES))(`%s exports at most ${MAX_NAMES} names`, (_entry, file) => {
    const names = [...exportsOf(file).keys()].sort();
    expect(names.length, names.join(', ')).toBeGreaterThan(0);
    expect(names.length, names.join(', ')).toBeLessThanOrEqual(MAX_NAMES);
  });

  it('give one name one meaning: a name several entries export is the same declaration in each', () => {
    const seen = new Map<string, { entry: string; symbol: ts.Symbol }>();
    const clashes: string[] = [];
    for (const [entry, file] of Object.entries(ENTRIES)) {
      for (const [name, symbol] of exportsOf(file)) {
        const earlier = seen.get(name);
        // createClient is the one name each platform entry defines for itself: same signature, its own default journal.
        if (earlier && earlier.symbol !== symbol && name !== 'createClient') clashes.push(`${name}: ${earlier.entry} and ${entry}`);
        if (!earlier) seen.set(name, { entry, symbol });
      }
    }
    expect(clashes).toEqual([]);
  });

  it("keep the journal implementer's interface off the caller's entries", () => {
    for (const entry of ['oncely/browser', 'oncely/node']) {
      const names = exportsOf(ENTRIES[entry] as string);
      for (const name of ['Journal', 'OperationRecord', 'NewOperation', 'OperationPatch', 'StoredResult'])
        expect(names.has(name), `${entry} exports ${name}`).toBe(false);
    }
    expect([...exportsOf('src/journal.ts').keys()]).toEqual(
      expect.arrayContaining(['Journal', 'OperationRecord', 'NewOperation', 'OperationPatch', 'StoredResult']),
    );
  });
});

describe('the server entries', () => {
  it("are the package's server subpaths, every one of them", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { types?: string }> };
    const server = Object.entries(pkg.exports)
      .filter(([, target]) => typeof target === 'object' && target.types?.startsWith('./dist/server/'))
      .map(([subpath]) => `oncely${subpath.slice(1)}`);
    expect(server.sort()).toEqual(Object.keys(SERVER_ENTRIES).sort());
  });

  it.each(Object.entries(SERVER_ENTRIES))(`%s exports at most ${MAX_NAMES} names`, (_entry, file) => {
    const names = [...exportsOf(file).keys()].sort();
    expect(names.length, names.join(', ')).toBeGreaterThan(0);
    expect(names.length, names.join(', ')).toBeLessThanOrEqual(MAX_NAMES);
  });

  it('give one name one meaning: a name several entries (client or server) export is the same declaration in each', () => {
    const seen = new Map<string, { entry: string; symbol: ts.Symbol }>();
    const clashes: string[] = [];
    for (const [entry, file] of [...Object.entries(SERVER_ENTRIES), ...Object.entries(ENTRIES)]) {
      for (const [name, symbol] of exportsOf(file)) {
        const earlier = seen.get(name);
        // idempotent (and its options) is the one name each framework entry defines for its framework; createClient as above.
        if (earlier && earlier.symbol !== symbol && name !== 'idempotent' && name !== 'createClient') clashes.push(`${name}: ${earlier.entry} and ${entry}`);
        if (!earlier) seen.set(name, { entry, symbol });
      }
    }
    expect(clashes).toEqual([]);
  });

  it.each(Object.entries(ERRORS_BY_ENTRY))('%s exports the server errors it throws, as classes (type and value)', (entry, errors) => {
    const names = exportsOf(SERVER_ENTRIES[entry] as string);
    for (const name of errors) {
      const symbol = names.get(name);
      expect(symbol, `${entry} does not export ${name}`).toBeDefined();
      expect((symbol as ts.Symbol).flags & ts.SymbolFlags.Class, `${entry}'s ${name} is not a class`).toBeTruthy();
    }
  });

  it('export every error class of src/server/errors on some entry', () => {
    const classes = readdirSync(join(ROOT, 'src/server/errors'))
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) => [...readFileSync(join(ROOT, 'src/server/errors', file), 'utf8').matchAll(/^export class (\w+)/gm)].map((match) => match[1] as string));
    expect(classes.length).toBeGreaterThanOrEqual(5);
    const listed = new Set(Object.values(ERRORS_BY_ENTRY).flat());
    expect(classes.filter((name) => !listed.has(name))).toEqual([]);
  });

  it("keep the key store implementer's interface off the server author's entries, on oncely/server/store", () => {
    for (const entry of Object.keys(SERVER_ENTRIES).filter((e) => e !== 'oncely/server/store')) {
      const names = exportsOf(SERVER_ENTRIES[entry] as string);
      for (const name of [...KEY_STORE_CONTRACT, ...KEY_STORE_HELPERS]) expect(names.has(name), `${entry} exports ${name}`).toBe(false);
    }
    expect([...exportsOf('src/server/store.ts').keys()]).toEqual(expect.arrayContaining([...KEY_STORE_CONTRACT, ...KEY_STORE_HELPERS, 'Tx']));
    expect([...exportsOf('src/server/testing.ts').keys()]).toEqual(expect.arrayContaining(['describeKeyStore']));
  });

  it("keep the reference server's internals off every entry", () => {
    const internal = [
      'createReplayCache',
      'ReplayCache',
      'CachedKey',
      'problem',
      'problemBody',
      'ProblemBody',
      'ProblemType',
      'PROBLEM_BASE',
      'MAX_JSON_DEPTH',
      'jsonTextProblem',
      'isFinalStatus',
      'WireResponse',
    ];
    for (const [entry, file] of [...Object.entries(SERVER_ENTRIES), ...Object.entries(ENTRIES)]) {
      const names = exportsOf(file);
      for (const name of internal) expect(names.has(name), `${entry} exports ${name}`).toBe(false);
    }
  });
});

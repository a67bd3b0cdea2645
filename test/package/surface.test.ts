/**
 * The client entries a user imports stay small enough to hold in one's head: each exports at
 * most 25 names (runtime values and types together), and a name exported by several client
 * entries is the same thing in each (`ResumeOutcome` once meant two things). A journal
 * implementer's names live in `oncely/journal`, not on the entries a caller imports.
 * Counted from the sources with the TypeScript checker, as `tsc` sees each entry's exports.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_NAMES = 25;

/** The client entries: package.json subpath → source file. (The server entries are not here yet.) */
const ENTRIES: Record<string, string> = {
  oncely: 'src/browser.ts',
  'oncely/browser': 'src/browser.ts',
  'oncely/node': 'src/node.ts',
  'oncely/service-worker': 'src/service-worker/index.ts',
  'oncely/react': 'src/react/index.ts',
  'oncely/journal': 'src/journal.ts',
};

const files = [...new Set(Object.values(ENTRIES))].map((file) => join(ROOT, file));
const program = ts.createProgram(files, { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, jsx: ts.JsxEmit.ReactJSX, noEmit: true, skipLibCheck: true });
const checker = program.getTypeChecker();

/** Each exported name of an entry, with the declaration it stands for. */
function exportsOf(file: string): Map<string, ts.Symbol> {
  const source = program.getSourceFile(join(ROOT, file));
  const symbol = source && checker.getSymbolAtLocation(source);
  if (!symbol) throw new Error(`${file}: not a module the checker can read`);
  return new Map(
    checker.getExportsOfModule(symbol).map((s) => [s.name, s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s]),
  );
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

  it('keep the journal implementer\'s interface off the caller\'s entries', () => {
    for (const entry of ['oncely/browser', 'oncely/node']) {
      const names = exportsOf(ENTRIES[entry] as string);
      for (const name of ['Journal', 'OperationRecord', 'NewOperation', 'OperationPatch', 'StoredResult']) expect(names.has(name), `${entry} exports ${name}`).toBe(false);
    }
    expect([...exportsOf('src/journal.ts').keys()]).toEqual(expect.arrayContaining(['Journal', 'OperationRecord', 'NewOperation', 'OperationPatch', 'StoredResult']));
  });
});

/**
 * Finds every JSDoc `@example` of `src/**` and type-checks them all in one TypeScript program
 * (two passes), the way a reader would use them:
 * - an example that imports from `oncely` / `oncely/…` is a whole program a user copies: it
 *   compiles standalone against the package's entries (mapped to their sources, as for the
 *   guides: ./compile.ts);
 * - any other example is a fragment written in its module's scope: it compiles appended to a
 *   copy of its own module (each in an async function of its own), so it sees what the module
 *   sees.
 *
 * Leniency, kept narrow: in a fragment, a name the module does not have is either a public name
 * (exported by an entry) or another module's export: imported from there, so its arguments are
 * checked; anything else is a placeholder for the reader's own value (`store`, `log`…): typed
 * where the name says what it is (`client`, `op`, `store`… see TYPED), else `any`. A standalone
 * example gets the placeholders only: a name it uses without importing it is an error.
 * Nothing is written to disk: the copies are virtual files next to their modules.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { entryPaths, userOptions } from './compile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** One fenced code block of an `@example` tag. */
export interface Example {
  /** The module it documents, relative to the repository (`src/…`). */
  readonly module: string;
  /** The line of the block's first code line in that module (1-based). */
  readonly line: number;
  readonly code: string;
  readonly tsx: boolean;
  /** Imports from `oncely` / `oncely/…`: a whole program, compiled standalone. */
  readonly standalone: boolean;
}

/** Every `.ts` file under `dir`, recursively (declaration files left out). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The `/** … *\/` comments of a module, found by TypeScript's scanner (never inside a string). */
function docComments(file: ts.SourceFile): ts.CommentRange[] {
  const seen = new Map<number, ts.CommentRange>();
  const visit = (node: ts.Node): void => {
    for (const range of ts.getLeadingCommentRanges(file.text, node.pos) ?? []) {
      if (file.text.startsWith('/**', range.pos)) seen.set(range.pos, range);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  visit(file.endOfFileToken);
  return [...seen.values()];
}

/** The fenced ts/tsx blocks of each `@example` tag of a module. */
export function examplesOf(path: string): Example[] {
  const text = readFileSync(path, 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
  const module = relative(ROOT, path);
  const found: Example[] = [];
  for (const range of docComments(file)) {
    const firstLine = file.getLineAndCharacterOfPosition(range.pos).line + 1;
    const lines = text
      .slice(range.pos, range.end)
      .split('\n')
      .map((line) => line.replace(/^\s*\/?\*+\/?\s?/, ''));
    let inExample = false;
    let fence: { lang: string; start: number; code: string[] } | undefined;
    lines.forEach((line, i) => {
      if (fence !== undefined) {
        if (/^\s*```\s*$/.test(line)) {
          if (inExample && /^(ts|tsx|typescript)$/.test(fence.lang)) {
            const code = fence.code.join('\n');
            const standalone = /^\s*import\b[^;]*?from\s+['"]oncely(\/[\w/-]+)?['"]/m.test(code);
            found.push({ module, line: firstLine + fence.start + 1, code, tsx: fence.lang === 'tsx', standalone });
          }
          fence = undefined;
        } else fence.code.push(line);
        return;
      }
      const opening = /^\s*```(\w*)/.exec(line);
      if (opening) fence = { lang: opening[1] ?? '', start: i, code: [] };
      else if (/^@\w+/.test(line)) inExample = line.startsWith('@example');
    });
  }
  return found;
}

/** Every example of `src/**`: globbed, so modules that move are still found. */
export function allExamples(): Example[] {
  return sources(join(ROOT, 'src')).sort().flatMap(examplesOf);
}

/** A virtual file of the program and, for a module's copy, where each example begins in it. */
interface Unit {
  readonly path: string;
  readonly examples: readonly Example[];
  /** Offsets in the unit's text where each example's code begins (its wrapper's first line). */
  readonly starts: readonly number[];
  /** The original module's length: diagnostics before it are the module's own, not ours. */
  readonly prefix: number;
  readonly text: string;
}

const UNKNOWN_NAME = new Set([2304, 2552, 18004]);
const PLACEHOLDER = 'placeholder';

/**
 * The placeholders that stand for a caller's value of a public type: typed, so what an example
 * does with them is checked. Any other placeholder is `any` (a value and a type of that name).
 */
const TYPED: Readonly<Record<string, string>> = {
  client: "import('oncely/node').Client",
  op: "import('oncely/node').Operation",
  journal: "import('oncely/journal').Journal",
  store: "import('oncely/server/store').KeyStore",
  handler: "import('oncely/server').IdempotencyHandler",
  baseUrl: 'string',
  url: 'string',
};

function declare(name: string): string {
  const type = TYPED[name];
  return type === undefined ? `let ${name}!: any; type ${name} = any; ` : `let ${name}!: ${type}; `;
}

/**
 * An example as TypeScript: its leading imports at the top level, the rest in an async function
 * of its own that opens on the last import's line (or the first line), so its lines stay its lines.
 */
function render(example: Example, index: number, stubs: readonly string[]): string {
  const lines = example.code.split('\n');
  const last = lines.reduce((found, line, n) => (/^\s*import\b/.test(line) ? n : found), -1);
  const head = `async function __oncelyExample${index}() { ${stubs.map(declare).join('')}`;
  if (last < 0) lines[0] = `${head}${lines[0] ?? ''}`;
  else lines[last] = `${lines[last] ?? ''} ${head}`;
  return `${lines.join('\n')}\n}\n`;
}

/** Builds the units: the module copies (fragments) and one file per standalone example. */
function units(examples: readonly Example[], stubs: Map<Example, string[]>, imports: Map<string, Map<string, string>>): Unit[] {
  const byModule = new Map<string, Example[]>();
  const result: Unit[] = [];
  examples.forEach((example, i) => {
    if (!example.standalone) {
      byModule.set(example.module, [...(byModule.get(example.module) ?? []), example]);
      return;
    }
    const name = `jsdoc-example.${example.module.replace(/[/.]/g, '_')}_${example.line}.${example.tsx ? 'tsx' : 'ts'}`;
    result.push({ path: join(ROOT, 'test/docs', name), examples: [example], starts: [0], prefix: 0, text: render(example, i, stubs.get(example) ?? []) });
  });
  for (const [module, group] of byModule) {
    const original = readFileSync(join(ROOT, module), 'utf8');
    const tsx = group.some((e) => e.tsx);
    let text = original;
    for (const [name, from] of imports.get(module) ?? []) text += `\nimport { ${name} } from '${from}';`;
    const starts: number[] = [];
    group.forEach((example) => {
      text += '\n';
      starts.push(text.length);
      text += render(example, examples.indexOf(example), stubs.get(example) ?? []);
    });
    const path = join(ROOT, module).replace(/\.tsx?$/, tsx ? '.examples.tsx' : '.examples.ts');
    result.push({ path, examples: group, starts, prefix: original.length, text });
  }
  return result;
}

function program(all: readonly Unit[], old?: ts.Program): ts.Program {
  const options = { ...userOptions(false), noUnusedLocals: false, noUnusedParameters: false, allowUnreachableCode: true };
  const host = ts.createCompilerHost(options);
  const virtual = new Map(all.map((unit) => [unit.path, unit.text]));
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (path) => virtual.has(path) || ts.sys.fileExists(path);
  host.readFile = (path) => virtual.get(path) ?? ts.sys.readFile(path);
  host.getSourceFile = (path, language, ...rest) => {
    const text = virtual.get(path);
    return text === undefined ? getSourceFile(path, language, ...rest) : ts.createSourceFile(path, text, language, true);
  };
  const entries = [...new Set(Object.values(entryPaths(false)).flat())];
  return ts.createProgram({ rootNames: [...entries, ...virtual.keys()], options, host, ...(old ? { oldProgram: old } : {}) });
}

/** Which example of a unit a position falls in, and the source line it is on. */
function locate(unit: Unit, file: ts.SourceFile, position: number): { example: Example; line: number } | undefined {
  if (position < unit.prefix) return undefined;
  let index = -1;
  unit.starts.forEach((start, i) => {
    if (start <= position) index = i;
  });
  const example = unit.examples[index];
  const start = unit.starts[index];
  if (example === undefined || start === undefined) return undefined;
  const offset = file.getLineAndCharacterOfPosition(position).line - file.getLineAndCharacterOfPosition(start).line;
  return { example, line: example.line + offset };
}

/** The public names and the entry each is imported from (the Node entry first). */
function publicNames(checked: ts.Program): Map<string, string> {
  const checker = checked.getTypeChecker();
  const names = new Map<string, string>();
  for (const [specifier, [path]] of Object.entries(entryPaths(false))) {
    const file = path === undefined ? undefined : checked.getSourceFile(path);
    const symbol = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    for (const exported of symbol ? checker.getExportsOfModule(symbol) : []) {
      if (!names.has(exported.name) && specifier !== 'oncely') names.set(exported.name, specifier);
    }
  }
  return names;
}

/**
 * The names each module of `src/**` declares and exports, with its path: a fragment may use a
 * name of another module as it is (`DEFAULT_RETRY` beside `retryDecision`), imported from there.
 */
function internalNames(checked: ts.Program): Map<string, string> {
  const checker = checked.getTypeChecker();
  const names = new Map<string, string>();
  const src = join(ROOT, 'src');
  for (const file of checked.getSourceFiles()) {
    if (!file.fileName.startsWith(src) || file.fileName.includes('.examples.')) continue;
    const symbol = checker.getSymbolAtLocation(file);
    for (const exported of symbol ? checker.getExportsOfModule(symbol) : []) {
      if (!(exported.flags & ts.SymbolFlags.Alias) && !names.has(exported.name)) names.set(exported.name, file.fileName);
    }
  }
  return names;
}

/** The specifier a module's copy imports `target` by (NodeNext: relative, with `.js`). */
function specifier(module: string, target: string): string {
  const path = relative(dirname(join(ROOT, module)), target).replace(/\.tsx?$/, '.js');
  return path.startsWith('.') ? path : `./${path}`;
}

/** Each problem of the examples as `src/module.ts:line message`; empty when they all compile. */
export function exampleDiagnostics(examples: readonly Example[]): { problems: string[]; placeholders: string[] } {
  const first = units(examples, new Map(), new Map());
  const firstProgram = program(first);
  const entries = publicNames(firstProgram);
  const internal = internalNames(firstProgram);
  const stubs = new Map<Example, string[]>();
  const imports = new Map<string, Map<string, string>>();
  for (const unit of first) {
    const file = firstProgram.getSourceFile(unit.path);
    for (const d of file ? firstProgram.getSemanticDiagnostics(file) : []) {
      const at = d.start === undefined || !file ? undefined : locate(unit, file, d.start);
      if (at === undefined || !file || !UNKNOWN_NAME.has(d.code)) continue;
      const name = file.text.slice(d.start, (d.start ?? 0) + (d.length ?? 0));
      const inside = internal.get(name);
      const from = entries.get(name) ?? (inside === undefined ? undefined : specifier(at.example.module, inside));
      if (from !== undefined && !at.example.standalone) {
        imports.set(at.example.module, (imports.get(at.example.module) ?? new Map()).set(name, from));
      } else if (from === undefined) {
        const list = stubs.get(at.example) ?? [];
        if (!list.includes(name)) stubs.set(at.example, [...list, name]);
      }
    }
  }
  const second = units(examples, stubs, imports);
  const checked = program(second, firstProgram);
  const problems: string[] = [];
  for (const unit of second) {
    const file = checked.getSourceFile(unit.path);
    if (!file) continue;
    for (const d of [...checked.getSyntacticDiagnostics(file), ...checked.getSemanticDiagnostics(file)]) {
      const at = d.start === undefined ? undefined : locate(unit, file, d.start);
      if (at === undefined && d.start !== undefined && d.start < unit.prefix) continue;
      const where = at ? `${at.example.module}:${at.line}` : `${unit.path}`;
      problems.push(`${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  const placeholders = [...stubs].map(([example, names]) => `${example.module}:${example.line} ${PLACEHOLDER} ${names.join(', ')}`);
  return { problems, placeholders };
}

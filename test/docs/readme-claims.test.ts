/**
 * Facts the README states about the package itself are checked against the package: what
 * `npm install oncely` pulls in.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');

interface LockEntry {
  readonly dependencies?: Readonly<Record<string, string>>;
}

/** Every package installing oncely brings along: its dependencies and theirs, from the lockfile. */
function installedWithOncely(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const seen = new Set<string>();
  const visit = (name: string, from: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const path = lock.packages[`${from}node_modules/${name}`] === undefined ? `node_modules/${name}` : `${from}node_modules/${name}`;
    for (const dependency of Object.keys(lock.packages[path]?.dependencies ?? {})) visit(dependency, `${path}/`);
  };
  for (const name of Object.keys(manifest.dependencies)) visit(name, '');
  return [...seen].sort();
}

const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

describe('the README', () => {
  it('counts and names every package `npm install oncely` pulls', () => {
    const claim = /`npm install oncely` pulls (\w+) small packages: ([^)]*)\)/.exec(readme);
    expect(claim, 'the sentence saying what `npm install oncely` pulls').not.toBeNull();
    const [, count = '', list = ''] = claim ?? [];
    const installed = installedWithOncely();
    expect(list.split(',').map((name) => name.trim()).sort()).toEqual(installed);
    expect(NUMBERS.indexOf(count)).toBe(installed.length);
  });
});

/**
 * Model-based runs of the Journal contract (src/journal/types.ts) on the memory and SQLite
 * journals (the browser suite runs the same model on IndexedDB: test/browser/). See
 * ./journal-model.ts.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { memoryJournal } from '../../../src/journal/memory.js';
import { sqliteJournal } from '../../../src/journal/sqlite.node.js';
import { checkProperty } from '../settings.js';
import { HOUR, journalCommands, runJournalModel } from './journal-model.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-journal-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const commands = fc.commands(journalCommands([0, 1, 1_000, HOUR]), { maxCommands: 40, size: 'medium' });

describe('Journal model', () => {
  it('memory: agrees with the model on every answer and every record, claims racing included', () =>
    checkProperty(
      fc.asyncProperty(commands, (cmds) => runJournalModel(() => memoryJournal(), cmds)),
      100,
    ));

  let files = 0;
  it('SQLite: agrees with the model on every answer and every record, claims racing included', () =>
    checkProperty(
      fc.asyncProperty(commands, (cmds) => {
        files += 1;
        return runJournalModel(() => sqliteJournal({ path: join(dir, `journal-${files}.db`) }), cmds);
      }),
      40,
    ));
});

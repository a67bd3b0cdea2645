/**
 * What `close()` promises: once it resolves, every outcome the client handed to its caller is in
 * the journal, whoever created the journal, whatever the process does next (`process.exit`, a
 * kill). An outcome left behind reads as pending and is sent again by the next `resume()`: a
 * second effect on any server that no longer holds the key, or never deduplicated.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal, OperationPatch } from '../../src/journal/types.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { spawnScript } from '../journal/fixtures/child-process.js';
import { startEffectServer, type EffectServer } from '../journal/fixtures/effect-server.js';

const CHILD = fileURLToPath(new URL('./fixtures/close-exit.child.ts', import.meta.url));

let dir: string;
let server: EffectServer;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-close-'));
  server = await startEffectServer();
});
afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('close()', () => {
  it.each(['client.close()', 'client.close() and journal.close()'])(
    'leaves every outcome of a journal the program created itself written when the program exits right after %s',
    async (how) => {
      const path = join(dir, 'journal.db');
      const child = spawnScript(CHILD, [server.url, path, '30', ...(how.includes('journal.close') ? ['close-journal'] : [])], {});
      const { keys } = (await child.next((event) => event.event === 'posted', 'posted', 60_000)) as unknown as { keys: string[] };
      expect(await child.exited).toBe(0);
      expect(keys).toHaveLength(30);

      const journal = sqliteJournal({ path });
      const states = (await journal.list()).map((record) => record.state);
      expect(states.filter((state) => state !== 'succeeded')).toEqual([]);
      // Nothing to send again: the next resume() finds nothing pending.
      const resumer = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer resumer' } });
      expect(await resumer.resume()).toEqual([]);
      await resumer.close();
      await journal.close();
      expect(server.attempts.filter((attempt) => attempt.process === 'resumer')).toEqual([]);
    },
    90_000,
  );

  it('writes again, before it resolves, an outcome whose write-behind failed', async () => {
    const inner = memoryJournal();
    let failures = 0;
    // A journal whose write-behind fails once (a lock held past its busy timeout, say).
    const flaky: Journal = {
      ...inner,
      kind: inner.kind,
      updateLater: async (_scope: string, _key: string, _patch: OperationPatch) => {
        failures += 1;
        throw new Error('database is locked');
      },
    };
    const client = createClient({ baseUrl: server.url, journal: flaky });
    const { key } = await client.post('v1/pay', { json: { amount: 1 } });
    await client.close();
    expect(failures).toBe(1);
    expect((await inner.get(client.scope, key))?.state).toBe('succeeded');
  });

  it('rejects, naming the operation, when an outcome cannot be written at all: the caller learns it may be sent again', async () => {
    const inner = memoryJournal();
    const broken: Journal = {
      ...inner,
      kind: inner.kind,
      updateLater: async () => {
        throw new Error('disk I/O error');
      },
      update: async (scope, key, patch) => {
        if (patch.state !== undefined) throw new Error('disk I/O error');
        return inner.update(scope, key, patch);
      },
    };
    const client = createClient({ baseUrl: server.url, journal: broken });
    const { key } = await client.post('v1/pay', { json: { amount: 1 } });
    await expect(client.close()).rejects.toMatchObject({ code: 'JOURNAL_ERROR', message: expect.stringContaining(key) });
    // Closed all the same: later calls are refused.
    await expect(client.post('v1/pay', { json: { amount: 2 } })).rejects.toMatchObject({ code: 'CONFIG' });
  });
});

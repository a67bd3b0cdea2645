import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/fingerprint.js';
import { deriveKey } from '../../src/keys.js';
import { rowFingerprint } from '../../src/cli/upload-file.js';
import { DEFAULT_KEY_COLUMNS, createRowMapper, isInvalidRow } from '../../src/cli/upload-rows.js';
import type { CsvRecord } from '../../src/cli/upload-csv.js';

const header: CsvRecord = { line: 1, fields: ['client_ref', 'operation', 'value_date', 'amount', 'currency', 'reference'] };
const defaults = { keyColumns: DEFAULT_KEY_COLUMNS, bodyColumns: undefined, namespace: undefined } as const;

function mapper(options: Parameters<typeof createRowMapper>[1] = defaults) {
  const made = createRowMapper(header, options);
  if (!made.ok) throw new Error(made.problem);
  return made.map;
}

describe('createRowMapper', () => {
  it('derives the key from client_ref, operation and value_date and posts the other columns with an integer amount', () => {
    const row = mapper()({ line: 2, fields: ['acme-17', 'pay', '2026-12-01', '1250', 'EUR', 'salary'] });
    expect(row).toEqual({
      line: 2,
      key: deriveKey(undefined, 'acme-17', 'pay', '2026-12-01'),
      body: '{"amount":1250,"currency":"EUR","reference":"salary"}',
    });
  });

  it('uses the given key columns, body columns and namespace', () => {
    const namespace = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';
    const row = mapper({ keyColumns: ['reference'], bodyColumns: ['amount', 'currency'], namespace })({
      line: 9,
      fields: ['a', 'b', 'c', '7', 'EUR', 'inv-1'],
    });
    expect(row).toEqual({ line: 9, key: deriveKey(namespace, 'inv-1'), body: '{"amount":7,"currency":"EUR"}' });
  });

  it.each([
    [['acme-1', 'pay', '2026-12-01', '12.50', 'EUR', 'x'], /amount "12.50" is not an integer/],
    [['acme-1', 'pay', '2026-12-01', '', 'EUR', 'x'], /amount "" is not an integer/],
    [['acme-1', '', '2026-12-01', '5', 'EUR', 'x'], /key column operation is empty/],
    [['acme-1', 'pay', '2026-12-01', '5', 'EUR'], /5 fields where the header has 6/],
  ])('reports a row %j as invalid with its line and why', (fields, reason) => {
    const row = mapper()({ line: 4, fields });
    expect(isInvalidRow(row) && row.line === 4 && reason.test(row.reason)).toBe(true);
  });

  it('refuses a file whose first line is not a header naming the key columns', () => {
    const made = createRowMapper({ line: 1, fields: ['acme-1', 'pay', '2026-12-01', '5'] }, defaults);
    expect(made.ok).toBe(false);
    expect(made.ok ? '' : made.problem).toMatch(/header naming the columns "client_ref", "operation", "value_date"/);
  });

  it('refuses a header that names a column twice', () => {
    const made = createRowMapper({ line: 1, fields: ['client_ref', 'operation', 'value_date', 'amount', 'amount'] }, defaults);
    expect(made.ok ? '' : made.problem).toMatch(/"amount" twice/);
  });
});

describe('rowFingerprint', () => {
  it("hashes exactly what the protocol fingerprint hashes, so a journaled row matches the client's own record", async () => {
    const body = '{"reference":"Zoë, \\"Z\\"","amount":1250,"currency":"EUR"}';
    expect(rowFingerprint('/v1/payments?x=1', body)).toBe(await fingerprint('POST', '/v1/payments?x=1', body, { contentType: 'application/json' }));
  });
});

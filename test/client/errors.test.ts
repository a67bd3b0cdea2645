import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  ExpiredOperationError,
  HttpError,
  InvalidKeyError,
  JournalError,
  KeyReusedError,
  OncelyError,
  OperationAbortedError,
  OperationPendingError,
  isOncelyError,
} from '../../src/errors.js';

const ref = { method: 'POST', url: 'http://127.0.0.1:8787/v1/payments', key: 'order-7' };

describe('errors', () => {
  const all: Array<[string, OncelyError]> = [
    ['KeyReusedError', new KeyReusedError(ref)],
    ['InvalidKeyError', new InvalidKeyError(ref, 400)],
    ['OperationPendingError', new OperationPendingError(ref, 3, 503)],
    ['HttpError', new HttpError(ref, { status: 402, headers: {}, body: '{}', replayed: true })],
    ['ExpiredOperationError', new ExpiredOperationError(ref, 0, 86_400_000)],
    ['OperationAbortedError', new OperationAbortedError(ref)],
  ];

  it.each(all)('%s names the method, the URL and the key in its message, and its own class in name', (name, error) => {
    expect(error.name).toBe(name);
    expect(error).toBeInstanceOf(OncelyError);
    expect(error.message).toContain('POST');
    expect(error.message).toContain(ref.url);
    expect(error.message).toContain(ref.key);
    expect(Object.values(ErrorCode)).toContain(error.code);
  });

  it('passes cause through', () => {
    const cause = new TypeError('fetch failed');
    expect(new OperationPendingError(ref, 1, undefined, { cause }).cause).toBe(cause);
    expect(new JournalError('locked', { path: '/tmp/j.db', hint: 'close the other process', cause }).cause).toBe(cause);
  });

  it('names the innermost cause in an OperationPendingError: every address of an AggregateError, a code the message lacks', () => {
    const refused = (address: string): Error => Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
    const both = Object.assign(new AggregateError([refused('::1:9'), refused('127.0.0.1:9')], ''), { code: 'ECONNREFUSED' });
    const fetchFailed = new TypeError('fetch failed', { cause: both });
    const error = new OperationPendingError(ref, 2, undefined, { cause: fetchFailed, reason: 'retry limit of 1 reached' });
    expect(error.message).toContain('no response, last error: connect ECONNREFUSED ::1:9; connect ECONNREFUSED 127.0.0.1:9 (retry limit of 1 reached);');
    expect(error.cause).toBe(fetchFailed);
    const reset = new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
    expect(new OperationPendingError(ref, 1, undefined, { cause: reset }).message).toContain('last error: UND_ERR_SOCKET: other side closed');
  });

  it('still builds an OperationPendingError message from a cyclic cause or a thrown non-error', () => {
    const cyclic = new Error('loop');
    (cyclic as { cause?: unknown }).cause = cyclic;
    expect(new OperationPendingError(ref, 1, undefined, { cause: cyclic }).message).toContain('last error: loop');
    expect(new OperationPendingError(ref, 1, undefined, { cause: 'socket hang up' }).message).toContain('last error: socket hang up');
    expect(new OperationPendingError(ref, 1, undefined, { cause: Object.create(null) }).message).toContain('last error: an error that cannot be described');
    expect(new OperationPendingError(ref, 1, 503).message).toContain('after 1 attempt(s), last status 503; the operation stays pending');
  });

  it('reads only string problem members, and nothing from a body that is not a JSON object', () => {
    const http = (body: string, replayed = false): HttpError => new HttpError(ref, { status: 400, headers: {}, body, replayed });
    for (const body of ['[{"title":"x"}]', '"Invalid request"', 'null', '{"title":', '']) {
      const error = http(body);
      expect([error.title, error.detail, error.problemType], body).toEqual([undefined, undefined, undefined]);
      expect(error.message, body).toBe(`POST ${ref.url} (Idempotency-Key ${ref.key}): the server answered 400`);
    }
    const mistyped = http('{"type":7,"title":["Invalid"],"detail":"amount must be an integer"}');
    expect([mistyped.problemType, mistyped.title, mistyped.detail]).toEqual([undefined, undefined, 'amount must be an integer']);
    expect(mistyped.message).toMatch(/the server answered 400: amount must be an integer$/);
    expect(http('{"title":"Declined"}', true).message).toMatch(/the server answered 400 \(replayed\) Declined$/);
  });

  it('leaves the detail out of KeyReusedError and InvalidKeyError messages when there is none', () => {
    expect(new KeyReusedError(ref, 422).message).toMatch(/the server answered 422: a different request under this key$/);
    expect(new KeyReusedError(ref).detail).toBeUndefined();
    expect(new InvalidKeyError(ref, 400, { detail: '' }).message).toMatch(/was refused by the server \(400\)$/);
  });

  it('says in a 401 or 403 HttpError that nothing was executed and the operation stays pending; not in a 402', () => {
    const problem = '{"title":"Unauthorized","detail":"Missing or unknown credentials"}';
    for (const status of [401, 403]) {
      expect(new HttpError(ref, { status, headers: {}, body: problem, replayed: false }).message).toBe(
        `POST ${ref.url} (Idempotency-Key ${ref.key}): the server answered ${status} Unauthorized: Missing or unknown credentials. ` +
          'Nothing was executed and the operation stays pending: resume() with valid credentials completes it',
      );
    }
    expect(new HttpError(ref, { status: 402, headers: {}, body: '{"title":"Declined"}', replayed: false }).message).toMatch(/answered 402 Declined$/);
  });

  it('says the key rule in a local InvalidKeyError, and shows only the start of a long key', () => {
    const long = new InvalidKeyError({ ...ref, key: 'x y'.repeat(40_000) });
    expect(long.message).toMatch(
      /the Idempotency-Key "(x y){26}x "… \(120000 characters\) is not a valid idempotency key \(1–255 characters from A-Z a-z 0-9 _ \. : ~ @ \/ \+ = -\)$/,
    );
    expect(long.message.length).toBeLessThan(300);
    expect(long.key).toHaveLength(120_000);
    expect(new InvalidKeyError({ ...ref, key: 'has space' }).message).toContain('"has space" is not a valid idempotency key (1–255 characters');
  });

  it('gives JournalError its path and hint', () => {
    const error = new JournalError('the journal file is locked', { path: '/tmp/j.db', hint: 'close the other process' });
    expect(error).toMatchObject({ code: 'JOURNAL_ERROR', path: '/tmp/j.db', hint: 'close the other process', name: 'JournalError' });
    expect(error.message).toContain('/tmp/j.db');
    expect(new JournalError('gone', { hint: 'reopen' }).path).toBeUndefined();
  });

  it('narrows by code with isOncelyError', () => {
    const error: unknown = new HttpError(ref, { status: 402, headers: {}, body: 'declined', replayed: false });
    expect(isOncelyError(error)).toBe(true);
    expect(isOncelyError(error, 'HTTP_ERROR') && error.status).toBe(402);
    expect(isOncelyError(error, 'KEY_REUSED')).toBe(false);
  });

  it('recognises an error from another copy of the package by its name and code', () => {
    const foreign = Object.assign(new Error('other bundle'), { name: 'OperationPendingError', code: 'OPERATION_PENDING' });
    expect(isOncelyError(foreign)).toBe(true);
    expect(isOncelyError(foreign, 'OPERATION_PENDING')).toBe(true);
  });

  it('rejects look-alikes: a plain Error, a wrong code, a non-error', () => {
    expect(isOncelyError(new Error('x'))).toBe(false);
    expect(isOncelyError(Object.assign(new Error('x'), { name: 'HttpError', code: 'NOPE' }))).toBe(false);
    expect(isOncelyError({ name: 'HttpError', code: 'HTTP_ERROR' })).toBe(false);
    expect(isOncelyError(undefined)).toBe(false);
  });
});

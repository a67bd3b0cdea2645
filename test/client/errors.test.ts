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

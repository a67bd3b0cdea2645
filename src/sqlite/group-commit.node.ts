/**
 * Group commit for a SQLite connection (either driver: `driver.node.ts`), shared by the client
 * journal and the server key store: calls made close together run in one transaction, and each
 * call's promise settles only after that transaction has committed.
 *
 * A commit is most of what a small write costs (WAL frame writes, lock syscalls, now and then a
 * checkpoint); a hundred calls made at once pay for one. A caller awaiting one call at a time
 * gets one transaction per call, as without grouping. Nothing resolves before the commit that
 * holds it.
 *
 * | what happens in a group                              | what its calls see                                  |
 * | ---------------------------------------------------- | --------------------------------------------------- |
 * | a call throws                                        | it rejects alone, undone (see `CallKind`); the others commit |
 * | SQLite itself ended the transaction (I/O error, full disk) | every call rejects: none is reported done      |
 * | COMMIT fails                                         | every call rejects                                  |
 * | the file is locked by another connection             | the group changed nothing: it runs again after a pause, with the calls queued meanwhile; a call still locked out `busyTimeoutMs` after it first was rejects with the caller's busy error |
 *
 * Waiting for a lock never blocks the event loop (see `busy.node.ts`): the connection is opened
 * with no driver busy timeout, and a group that found the file locked waits on a timer.
 *
 * Calls of one group may see each other's uncommitted rows. They commit or fail together, so no
 * call is ever answered from a row that did not commit.
 *
 * @module
 * @internal
 */
import type { SqliteDatabase, SqliteStatement } from './driver.node.js';
import { busyPause, isBusy } from './busy.node.js';
import { fifoLock } from './fifo-lock.js';
import { SCOPES, Savepoint, controlStatements, failed, succeeded, type CallKind, type CallScope, type Control, type Outcome } from './call-scope.node.js';

export type { CallKind, CallScope } from './call-scope.node.js';

/** Options of {@link groupCommit}. */
export interface GroupCommitOptions {
  /** The connection (opened or returned) when a group runs; a throw rejects the group's calls. */
  readonly connect: () => SqliteDatabase;
  /** How long a call waits for another connection's lock, in total, before it rejects. */
  readonly busyTimeoutMs: number;
  /**
   * When a group starts after its first call. `'tick'`: in a microtask — the calls made
   * synchronously one after another (a map over rows, `Promise.all`) form one group. `'turn'`: on
   * the next turn of the event loop — also the calls of requests that arrived in the same poll
   * and reached a commit meanwhile (a request runs from one commit to the next without yielding
   * to the loop: every await in between is a microtask).
   */
  readonly gather: 'tick' | 'turn';
  /** Turns the error a call rejects with (a driver error, the busy error) into the caller's. */
  readonly mapError: (error: unknown) => unknown;
}

/** Runs calls on one connection in grouped transactions; see the module comment. */
export interface GroupCommit {
  /** Queues `run` for the next group; settles after the group's transaction has ended. */
  submit<T>(kind: CallKind, run: (scope: CallScope) => Promise<T> | T): Promise<T>;
  /**
   * Queues `run` as `submit` does, but starts no group for it before the next turn of the event
   * loop: a call submitted meanwhile takes it along, ahead of itself (the queue is first in, first
   * out), so no later call misses its write. For a write-behind: it often shares the next commit.
   */
  defer<T>(kind: CallKind, run: (scope: CallScope) => Promise<T> | T): Promise<T>;
  /**
   * Runs `fn` alone on the connection: no group is open, none starts until it ends. `fn` must
   * change nothing when it fails with SQLITE_BUSY: it is then run again after a pause, as a
   * group is, until `busyTimeoutMs`.
   */
  exclusive<T>(fn: () => Promise<T> | T): Promise<T>;
  /** The scope of the call running now, if any (for statements the call's code reaches indirectly). */
  current(): CallScope | undefined;
  /**
   * Runs whatever is queued now, synchronously and without waiting for locks (before closing).
   * Calls whose code awaits, or queued behind a running group, run later as usual.
   */
  drain(): void;
}

interface Call {
  readonly kind: CallKind;
  readonly run: (scope: CallScope) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** When this call first found the file locked. */
  lockedSince?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';

/**
 * Creates the group commit of one connection; see the module comment.
 *
 * @example
 * ```ts
 * const group = groupCommit({ connect: () => db, busyTimeoutMs: 5000, gather: 'tick', mapError: (error) => error });
 * const changes = await group.submit('write', () => db.prepare('DELETE FROM t WHERE x = ?').run(1).changes);
 * ```
 */
export function groupCommit({ connect, busyTimeoutMs, gather, mapError }: GroupCommitOptions): GroupCommit {
  const lock = fifoLock();
  let queue: Call[] = [];
  let scheduled = false;
  // Set while deferred calls wait for the next turn (see `defer`); any other call starts them sooner.
  let deferredTurn = false;
  // Set while the queue waits for another connection's lock: no group starts before it fires.
  let parked: ReturnType<typeof setTimeout> | undefined;
  let running: CallScope | undefined;
  let control: Control | undefined;

  const schedule = (): void => {
    if (scheduled || parked || queue.length === 0) return;
    scheduled = true;
    if (gather === 'tick') queueMicrotask(start);
    else setImmediate(start);
  };
  const scheduleDeferred = (): void => {
    if (scheduled || deferredTurn || parked) return;
    deferredTurn = true;
    setImmediate(() => {
      deferredTurn = false;
      schedule();
    });
  };
  const enqueue = <T>(kind: CallKind, run: (scope: CallScope) => Promise<T> | T, then: () => void): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ kind, run, resolve: resolve as (value: unknown) => void, reject });
      then();
    });
  const start = (): void => {
    if (lock.tryAcquire()) flush();
    else void lock.acquire().then(flush);
  };
  const flush = (): void => {
    scheduled = false;
    const calls = queue;
    queue = [];
    if (calls.length > 0) run(calls, true);
    else lock.release();
  };

  // A locked file: nothing of the group happened, so its calls go back to the head of the queue,
  // but for those locked out for `busyTimeoutMs` already, which reject.
  const retryLater = (calls: readonly Call[], error: unknown): void => {
    const now = Date.now();
    const waiting = calls.filter((call) => {
      call.lockedSince ??= now;
      if (busyPause(call.lockedSince, now, busyTimeoutMs) !== undefined) return true;
      call.reject(mapError(error));
      return false;
    });
    if (waiting.length === 0) return;
    queue = [...waiting, ...queue];
    // The oldest call's pause: it has waited longest and has the nearest deadline.
    const pause = busyPause(Math.min(...waiting.map((call) => call.lockedSince ?? now)), now, busyTimeoutMs) ?? 0;
    if (parked) clearTimeout(parked);
    parked = setTimeout(() => {
      parked = undefined;
      schedule();
    }, pause);
  };

  // The lock is released before any call settles: code that continues after a call (a close(),
  // the next call) finds the connection free.
  const settle = (calls: readonly Call[], outcomes: readonly Outcome[]): void => {
    lock.release();
    for (let index = 0; index < calls.length; index += 1) {
      const call = calls[index]!;
      const outcome = outcomes[index] ?? { ok: false, error: new Error('the call was not run') };
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(mapError(outcome.error));
    }
  };
  const failAll = (calls: readonly Call[], error: unknown): void =>
    settle(
      calls,
      calls.map(() => ({ ok: false, error })),
    );

  // A locked file changed nothing: the calls wait for it (or, when draining, fail at once).
  const notStarted = (calls: readonly Call[], error: unknown, retry: boolean): void => {
    if (retry && isBusy(error)) {
      lock.release();
      retryLater(calls, error);
    } else {
      failAll(calls, error);
    }
  };

  /**
   * A one-statement call on its own needs no BEGIN: SQLite runs a statement in a transaction of
   * its own, and a locked file fails that statement before it changed anything. Plain functions
   * down to the call's code: this is the journal's most common path.
   */
  const runAlone = (calls: readonly Call[], call: Call, kind: 'read' | 'write', retry: boolean): void => {
    let value: unknown;
    try {
      connect();
      value = call.run(SCOPES[kind]);
    } catch (error) {
      notStarted(calls, error, retry);
      return;
    }
    if (!isThenable(value)) settle(calls, [{ ok: true, value }]);
    else
      Promise.resolve(value).then(
        (result) => settle(calls, [{ ok: true, value: result }]),
        (error: unknown) => notStarted(calls, error, retry),
      );
  };

  /** Runs `calls` under the lock, releases it and settles every call; never throws. */
  const run = (calls: readonly Call[], retry: boolean): void => {
    const only = calls.length === 1 ? calls[0] : undefined;
    if (only?.kind === 'read' || only?.kind === 'write') runAlone(calls, only, only.kind, retry);
    else void runGroup(calls, retry);
  };

  /**
   * Runs `calls` as one transaction. Synchronous to the end when the calls are (nothing else can
   * then run on the connection while the group's transaction is open, not even a microtask).
   */
  const runGroup = async (calls: readonly Call[], retry: boolean): Promise<void> => {
    let db: SqliteDatabase;
    try {
      db = connect();
      if (control?.db !== db) control = controlStatements(db);
      (calls.some((call) => call.kind !== 'read') ? control.beginWrite : control.beginRead).run();
    } catch (error) {
      notStarted(calls, error, retry);
      return;
    }
    const statements = control;
    const outcomes: Outcome[] = [];
    try {
      for (const call of calls) {
        const { kind } = call;
        const scope = kind === 'read' || kind === 'write' ? SCOPES[kind] : new Savepoint(db, statements, kind === 'scoped' || calls.length > 1);
        running = scope;
        let value: unknown;
        let thrown: { readonly error: unknown } | undefined;
        try {
          if (kind === 'atomic') scope.savepoint();
          value = call.run(scope);
          // Only async code awaits: a group of synchronous calls runs without a gap.
          if (isThenable(value)) value = await value;
        } catch (error) {
          thrown = { error };
        }
        running = undefined;
        const opened = scope instanceof Savepoint && scope.opened;
        outcomes.push(thrown ? failed(db, statements, opened, thrown.error) : succeeded(db, statements, opened, value));
      }
      // An atomic call alone has no savepoint: it is undone with its transaction.
      if (calls.length === 1 && calls[0]?.kind === 'atomic' && outcomes[0]?.ok === false) statements.rollback.run();
      else statements.commit.run();
    } catch (error) {
      try {
        if (db.inTransaction) statements.rollback.run();
      } catch {
        // The connection is broken; every call of the group is reported failed below.
      }
      failAll(calls, error);
      return;
    }
    settle(calls, outcomes);
  };

  return {
    submit: <T>(kind: CallKind, run: (scope: CallScope) => Promise<T> | T): Promise<T> => enqueue(kind, run, schedule),
    defer: <T>(kind: CallKind, run: (scope: CallScope) => Promise<T> | T): Promise<T> => enqueue(kind, run, scheduleDeferred),
    async exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
      let lockedSince: number | undefined;
      for (;;) {
        if (!lock.tryAcquire()) await lock.acquire();
        let pause: number | undefined;
        try {
          return await fn();
        } catch (error) {
          const now = Date.now();
          lockedSince ??= now;
          pause = isBusy(error) ? busyPause(lockedSince, now, busyTimeoutMs) : undefined;
          if (pause === undefined) throw mapError(error);
        } finally {
          lock.release();
        }
        await sleep(pause);
      }
    },
    current: () => running,
    drain() {
      if (parked) clearTimeout(parked);
      parked = undefined;
      if (queue.length === 0 || !lock.tryAcquire()) return;
      const calls = queue;
      queue = [];
      run(calls, false);
    },
  };
}

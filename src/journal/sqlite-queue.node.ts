/**
 * Group commit for the SQLite journal: every call made in the same tick runs in one
 * transaction, and each call's promise settles only after that transaction has committed.
 *
 * A commit is the expensive part of a journal write (WAL frame writes, lock syscalls, a
 * checkpoint now and then); an uploader settling a thousand rows at once, or a client finishing
 * many requests together, pays for one instead of a thousand. A caller awaiting one call at a
 * time sees exactly one transaction per call, as without the queue. Durability is unchanged:
 * nothing resolves before the commit that contains it.
 *
 * A call that fails rejects alone: a single-statement call is undone by SQLite's statement
 * atomicity, a multi-statement call (`atomic`) runs in its own savepoint. If SQLite itself
 * ended the transaction (I/O error, disk full), the rest of the group is not run and every call
 * of the group rejects — none of them is reported done unless its commit happened.
 *
 * Waiting for another process's lock happens here, asynchronously: the driver's own busy wait
 * (which blocks the whole event loop) is kept short, and a group that found the file locked —
 * which means it changed nothing — is run again after a short pause, until `busyTimeoutMs`.
 *
 * @module
 * @internal
 */
import type Database from 'better-sqlite3';

/** `read` takes no write lock; `write` is one statement; `atomic` is several, all or none. */
export type TaskKind = 'read' | 'write' | 'atomic';

interface Task {
  readonly kind: TaskKind;
  /** When this call first found the file locked. */
  lockedSince?: number;
  readonly run: (db: Database.Database) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** Runs journal calls in grouped transactions; see the module comment. */
export interface CommitQueue {
  /** Queues `run`, to be run in this tick's group. */
  submit<T>(kind: TaskKind, run: (db: Database.Database) => T): Promise<T>;
  /** Runs whatever is queued now, synchronously and without waiting for locks (before closing). */
  drain(): void;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** How the queue talks to its journal. */
export interface CommitQueueOptions {
  /** Opens (or returns) the connection when a group runs. */
  readonly connect: () => Database.Database;
  /** Turns a driver error into the error the caller sees. */
  readonly mapError: (error: unknown) => unknown;
  /** How long a group keeps retrying while the file is locked. */
  readonly busyTimeoutMs: number;
}

/** Whether `error` (or its cause) says the database was locked by another connection. */
export function isBusy(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 3; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) return true;
  }
  return false;
}

/** Creates the queue; see the module comment. */
export function commitQueue({ connect, mapError, busyTimeoutMs }: CommitQueueOptions): CommitQueue {
  let queue: Task[] = [];
  // Built once per connection: wrapping a function in db.transaction() costs more than the
  // savepoint itself.
  let wrapped: { readonly db: Database.Database; readonly inSavepoint: (task: Task) => unknown } | undefined;
  const savepointRunner = (db: Database.Database): ((task: Task) => unknown) => {
    if (wrapped?.db !== db) wrapped = { db, inSavepoint: db.transaction((task: Task) => task.run(db)) };
    return wrapped.inSavepoint;
  };

  const runGroup = (db: Database.Database, tasks: readonly Task[]): Outcome[] => {
    const outcomes: Outcome[] = [];
    const inSavepoint = savepointRunner(db);
    const group = db.transaction(() => {
      for (const task of tasks) {
        try {
          outcomes.push({ ok: true, value: task.kind === 'atomic' ? inSavepoint(task) : task.run(db) });
        } catch (error) {
          // SQLite rolled the whole transaction back: later calls would run outside it.
          if (!db.inTransaction) throw error;
          outcomes.push({ ok: false, error });
        }
      }
    });
    if (tasks.some((task) => task.kind !== 'read')) group.immediate();
    else group.deferred();
    return outcomes;
  };

  const schedule = (): void => {
    if (queue.length > 0) queueMicrotask(() => flush(true));
  };

  // A locked file: nothing of this group happened, so it runs again later (with whatever was
  // queued meanwhile), unless its oldest call has waited `busyTimeoutMs` already.
  const retryLater = (tasks: Task[], error: unknown): void => {
    const now = Date.now();
    for (const task of tasks) task.lockedSince ??= now;
    const waited = now - Math.min(...tasks.map((task) => task.lockedSince ?? now));
    if (waited >= busyTimeoutMs) {
      for (const task of tasks) task.reject(mapError(error));
      return;
    }
    const pause = Math.min(50, 5 + waited / 10, busyTimeoutMs - waited);
    setTimeout(() => {
      const wasEmpty = queue.length === 0;
      queue = [...tasks, ...queue];
      if (wasEmpty) schedule();
    }, pause);
  };

  const flush = (retry: boolean): void => {
    const tasks = queue;
    queue = [];
    if (tasks.length === 0) return;
    let outcomes: Outcome[];
    try {
      const db = connect();
      if (tasks.length === 1) {
        const [task] = tasks as [Task];
        outcomes = [{ ok: true, value: task.kind === 'atomic' ? db.transaction(() => task.run(db)).immediate() : task.run(db) }];
      } else {
        outcomes = runGroup(db, tasks);
      }
    } catch (error) {
      if (retry && isBusy(error)) retryLater(tasks, error);
      else for (const task of tasks) task.reject(mapError(error));
      return;
    }
    tasks.forEach((task, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) task.resolve(outcome.value);
      else task.reject(mapError(outcome.error));
    });
  };

  return {
    submit<T>(kind: TaskKind, run: (db: Database.Database) => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ kind, run, resolve: resolve as (value: unknown) => void, reject });
        // Calls made synchronously one after another (a map over rows, Promise.all) all land
        // before this microtask runs, and form one group.
        if (queue.length === 1) schedule();
      });
    },
    drain: () => flush(false),
  };
}

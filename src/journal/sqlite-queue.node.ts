/**
 * Group commit for the SQLite journal: every call made in the same tick runs in one
 * transaction, and each call's promise settles only after that transaction has committed.
 *
 * A commit is the expensive part of a journal write (WAL frame write, locks, a checkpoint now
 * and then); an uploader settling a thousand rows at once, or a client finishing many requests
 * together, pays for one instead of a thousand. A caller awaiting one call at a time sees
 * exactly one transaction per call, as without the queue. Durability is unchanged: nothing
 * resolves before the commit that contains it.
 *
 * Each call runs inside its own savepoint, so a call that throws rolls back only its own
 * changes and rejects alone; a failure of the transaction itself (lock timeout, I/O error)
 * rejects every call of the group.
 *
 * @module
 * @internal
 */
import type Database from 'better-sqlite3';

interface Task {
  readonly write: boolean;
  readonly run: (db: Database.Database) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** Runs journal calls in grouped transactions; see the module comment. */
export interface CommitQueue {
  /** Queues `run`; `write` says whether it writes (a read-only group needs no write lock). */
  submit<T>(write: boolean, run: (db: Database.Database) => T): Promise<T>;
  /** Runs whatever is queued now, synchronously (before closing the connection). */
  drain(): void;
}

/**
 * Creates the queue. `connect` opens (or returns) the connection when a group runs; `mapError`
 * turns a driver error into the error the caller sees.
 */
export function commitQueue(connect: () => Database.Database, mapError: (error: unknown) => unknown): CommitQueue {
  let queue: Task[] = [];
  // Built once per connection: wrapping a function in db.transaction() costs more than the
  // savepoint itself.
  let wrapped: { readonly db: Database.Database; readonly inSavepoint: (task: Task) => unknown } | undefined;
  const savepointRunner = (db: Database.Database): ((task: Task) => unknown) => {
    if (wrapped?.db !== db) wrapped = { db, inSavepoint: db.transaction((task: Task) => task.run(db)) };
    return wrapped.inSavepoint;
  };

  const settle = (task: Task, run: () => unknown): void => {
    try {
      task.resolve(run());
    } catch (error) {
      task.reject(mapError(error));
    }
  };

  const flush = (): void => {
    const tasks = queue;
    queue = [];
    if (tasks.length === 0) return;
    let db: Database.Database;
    try {
      db = connect();
    } catch (error) {
      for (const task of tasks) task.reject(mapError(error));
      return;
    }
    if (tasks.length === 1) {
      const [task] = tasks as [Task];
      settle(task, () => task.run(db));
      return;
    }
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    const inSavepoint = savepointRunner(db);
    const group = db.transaction(() => {
      for (const task of tasks) {
        try {
          outcomes.push({ ok: true, value: inSavepoint(task) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
    try {
      if (tasks.some((task) => task.write)) group.immediate();
      else group.deferred();
    } catch (error) {
      for (const task of tasks) task.reject(mapError(error));
      return;
    }
    tasks.forEach((task, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) task.resolve(outcome.value);
      else task.reject(mapError(outcome.error));
    });
  };

  return {
    submit<T>(write: boolean, run: (db: Database.Database) => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ write, run, resolve: resolve as (value: unknown) => void, reject });
        // Calls made synchronously one after another (a map over rows, Promise.all) all land
        // before this microtask runs, and form one group.
        if (queue.length === 1) queueMicrotask(flush);
      });
    },
    drain: flush,
  };
}

/**
 * One lane per scope: the agent's work on one scope (its messages, ending its conversation, the
 * idle sweep's end and compaction) runs one task at a time, in arrival order; scopes do not wait
 * for each other. A failed task does not stop the ones queued after it.
 */

/** Runs `task` after every earlier task of the same key. */
export type ScopeQueue = <T>(key: string, task: () => Promise<T>) => Promise<T>;

export function createScopeQueue(): ScopeQueue {
  const queues = new Map<string, Promise<unknown>>();
  return function serialized<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(key, tail);
    void tail.then(() => {
      if (queues.get(key) === tail) queues.delete(key);
    });
    return run;
  };
}

/**
 * One-at-a-time work per key inside a process: `run(key, work)` starts `work` only after every
 * earlier call with the same key has settled (fulfilled or rejected), while work on other keys runs
 * freely. The host runner uses it so that two attempts preparing one sandbox group (a retry while
 * the lost one still runs), or a container's creation and its disk's release, never interleave.
 */
export type KeyedSerializer = <T>(key: string, work: () => Promise<T>) => Promise<T>;

/** A new serializer with its own keys (a failed call never blocks the next one). */
export function keyedSerializer(): KeyedSerializer {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, work: () => Promise<T>) => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    tails.set(key, run);
    void run.catch(() => undefined).finally(() => {
      if (tails.get(key) === run) tails.delete(key);
    });
    return run;
  };
}

import type { Running } from './processes.ts';

export interface Lifecycle {
  /** Resolves to what `starting` started; from the moment it is called, `stopAll` and a signal wait for it and stop it. */
  start<T>(starting: Promise<Running<T>>): Promise<T>;
  /** Stops everything started, after waiting for what is still starting; called again, awaits the same stop. */
  stopAll(): Promise<void>;
}

/**
 * What a bench starts (platforms, databases, servers), stopped at the end, on a failure, or on
 * SIGINT / SIGTERM. A signal during a start waits for that start to end and stops what it started:
 * a platform half up when Ctrl-C (or `timeout`) came used to leave its processes and databases behind.
 */
export function benchLifecycle(progress: (message: string) => void): Lifecycle {
  const running: Running<unknown>[] = [];
  const starting = new Set<Promise<unknown>>();
  let signalled = false;

  const start = async <T>(pending: Promise<Running<T>>): Promise<T> => {
    starting.add(pending);
    try {
      const started = await pending;
      running.push(started);
      if (!signalled) return started.value;
    } catch (err) {
      if (!signalled) throw err;
    } finally {
      starting.delete(pending);
    }
    // After a signal the run goes no further: the handler stops what started, then exits.
    return new Promise<T>(() => {});
  };
  // One stop, which every caller awaits: a signal during the run's own teardown waits for it to end.
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      await Promise.allSettled([...starting]);
      await Promise.all(running.splice(0).map((r) => r.stop().catch((err) => progress(`while stopping: ${(err as Error).message}`))));
    })());
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, async () => {
      signalled = true;
      progress(`${signal}: stopping`);
      await stopAll();
      process.exit(code);
    });
  }
  return { start, stopAll };
}

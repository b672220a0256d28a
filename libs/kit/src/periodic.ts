import type { Logger } from './logger.ts';

export interface Periodic {
  /** Stops the ticks and waits for the run under way, if any. */
  stop(): Promise<void>;
}

const FAILURE_LOG_EVERY_MS = 60_000;

/**
 * Runs `task` every `intervalMs` until stopped. A tick that finds the previous run still going
 * skips it, so slow runs never pile up; a failed run is logged (at most once a minute, as `what`)
 * and the next tick tries again.
 */
export function repeatEvery(intervalMs: number, task: () => Promise<unknown>, log: Pick<Logger, 'warn'>, what: string): Periodic {
  let running: Promise<void> | undefined;
  let lastFailureLog = 0;
  const run = async () => {
    try {
      await task();
    } catch (err) {
      if (Date.now() - lastFailureLog < FAILURE_LOG_EVERY_MS) return;
      lastFailureLog = Date.now();
      log.warn({ err }, `${what} failed; will retry`);
    }
  };
  const timer = setInterval(() => {
    running ??= run().finally(() => {
      running = undefined;
    });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

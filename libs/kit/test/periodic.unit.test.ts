import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { repeatEvery } from '../src/periodic.ts';

describe('repeatEvery', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('skips a tick while the previous run is still going, and stopping waits for that run', async () => {
    let finish: () => void = () => {};
    const runs: number[] = [];
    const task = vi.fn(() => {
      runs.push(Date.now());
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    });
    const periodic = repeatEvery(1_000, task, { warn: vi.fn() }, 'test task');
    await vi.advanceTimersByTimeAsync(3_500);
    expect(task).toHaveBeenCalledTimes(1);
    finish();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(task).toHaveBeenCalledTimes(2);
    let stopped = false;
    const stopping = periodic.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(task).toHaveBeenCalledTimes(2);
  });

  it('logs a failed run at most once a minute and tries again on the next tick', async () => {
    const warn = vi.fn();
    const task = vi.fn(() => Promise.reject(new Error('down')));
    const periodic = repeatEvery(10_000, task, { warn }, 'room check');
    await vi.advanceTimersByTimeAsync(50_000);
    expect(task).toHaveBeenCalledTimes(5);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith({ err: new Error('down') }, 'room check failed; will retry');
    await vi.advanceTimersByTimeAsync(20_000);
    expect(warn).toHaveBeenCalledTimes(2);
    await periodic.stop();
  });
});

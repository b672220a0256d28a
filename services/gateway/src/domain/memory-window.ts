/** The outcome of counting one request in a window. */
export interface WindowVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the oldest counted request leaves the window (epoch ms): a slot frees up then. */
  resetAtMs: number;
  /** The clock the verdict was computed with (Redis's own, or this process's). */
  nowMs: number;
}

const MAX_KEYS = 100_000;

/**
 * Sliding windows kept in this process: the fallback while Redis is unreachable. Exact per key
 * within one process; bounded, dropping the least recently created keys first.
 */
export function createMemoryWindows() {
  const windows = new Map<string, number[]>();

  return function hit(key: string, limit: number, windowMs: number, nowMs = Date.now()): WindowVerdict {
    const stamps = (windows.get(key) ?? []).filter((t) => t > nowMs - windowMs);
    const allowed = stamps.length < limit;
    if (allowed) stamps.push(nowMs);
    windows.delete(key);
    windows.set(key, stamps);
    if (windows.size > MAX_KEYS) windows.delete(windows.keys().next().value as string);
    return { allowed, limit, remaining: limit - stamps.length, resetAtMs: (stamps[0] ?? nowMs) + windowMs, nowMs };
  };
}

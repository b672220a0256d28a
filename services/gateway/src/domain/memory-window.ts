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
  const live = (key: string, windowMs: number, nowMs: number) => (windows.get(key) ?? []).filter((t) => t > nowMs - windowMs);
  const store = (key: string, stamps: number[]) => {
    windows.delete(key);
    windows.set(key, stamps);
    if (windows.size > MAX_KEYS) windows.delete(windows.keys().next().value as string);
  };
  const verdict = (allowed: boolean, limit: number, stamps: number[], windowMs: number, nowMs: number): WindowVerdict => ({
    allowed,
    limit,
    remaining: limit - stamps.length,
    resetAtMs: (stamps[0] ?? nowMs) + windowMs,
    nowMs,
  });

  return {
    /** Counts a request when the window has room. */
    hit(key: string, limit: number, windowMs: number, nowMs = Date.now()): WindowVerdict {
      const stamps = live(key, windowMs, nowMs);
      const allowed = stamps.length < limit;
      if (allowed) stamps.push(nowMs);
      store(key, stamps);
      return verdict(allowed, limit, stamps, windowMs, nowMs);
    },
    /** Whether the window has room, without counting anything. */
    peek(key: string, limit: number, windowMs: number, nowMs = Date.now()): WindowVerdict {
      const stamps = live(key, windowMs, nowMs);
      return verdict(stamps.length < limit, limit, stamps, windowMs, nowMs);
    },
    /** Moves one counted request (counted at `stampMs`) from one window to another. */
    move(from: string, to: string, stampMs: number): void {
      const stamps = windows.get(from);
      const index = stamps?.indexOf(stampMs) ?? -1;
      if (stamps && index >= 0) stamps.splice(index, 1);
      store(to, [...(windows.get(to) ?? []), stampMs]);
    },
  };
}

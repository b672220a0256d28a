/**
 * Waits for something another process does in its own time (a relay, a consumer, a stream): polls
 * `check` until it answers truthy, and fails naming `what` after `timeoutMs`. For work that this
 * test drives itself, use fake timers or an injected clock instead.
 */
export async function until(
  check: () => Promise<unknown>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const { timeoutMs = 10_000, intervalMs = 25, what = 'the condition holds' } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Like `until`, but answers the last value `attempt` gave, done or not, for the test to assert on. */
export async function lastAttempt<T>(attempt: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  let value = await attempt();
  const deadline = Date.now() + timeoutMs;
  while (!done(value) && Date.now() <= deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await attempt();
  }
  return value;
}

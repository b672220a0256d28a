import type { ChildProcess } from 'node:child_process';

/** Exited on its own or by a signal (a process killed by a signal has a signal code and no exit code). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Sends `signal` and resolves with the exit code once the process is gone, killing it after
 * `killAfterMs` if it is still there. A process that has already exited (by a signal too, as
 * Ctrl-C sends SIGINT to the whole process group) emits no 'exit' again: it resolves at once.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 15_000): Promise<number | null> {
  if (hasExited(child)) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../src/logger.ts';

/** A logger with the platform's real configuration (redaction included) that writes into memory. */
export function captureLogs(level = 'trace'): { log: Logger; text(): string; entries(): Record<string, unknown>[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const log = createLogger({ service: 'kit-test', level, destination });
  const text = () => chunks.join('');
  return {
    log,
    text,
    entries: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

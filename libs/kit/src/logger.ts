import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger };

/** Paths that may carry secrets; pino replaces their values before anything is written. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.secret',
  'password',
  'token',
  'refreshToken',
];

/** JSON lines on stdout; `destination` lets tests read what would have been written. */
export function createLogger(options: { service: string; level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}

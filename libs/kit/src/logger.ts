import { type Logger, pino } from 'pino';

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

export function createLogger(options: { service: string; level: string }): Logger {
  return pino({
    level: options.level,
    base: { service: options.service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

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

/** The token of a webhook execution url (`/v1/webhooks/{id}/{token}`): a secret in a path. */
const SECRET_PATH_SEGMENT = /^(\/v1\/webhooks\/[^/?#]+\/)[^/?#]+/i;

/** A url as it may be logged: path segments that are secrets replaced. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PATH_SEGMENT, '$1[redacted]');
}

type LoggedRequest = {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  headers?: Record<string, unknown>;
  socket?: { remotePort?: number };
};

/** Fastify's own request serializer, with the url redacted (Fastify prefers the instance's serializers). */
function serializeRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** JSON lines on stdout; `destination` lets tests read what would have been written. */
export function createLogger(options: { service: string; level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { req: serializeRequest },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}

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

/**
 * A url as it may be logged: the token of a webhook execution url (`/v1/webhooks/{id}/{token}`, a
 * secret in a path) and whatever follows it replaced. The path is read as a router might read it,
 * whatever its spelling (`/v1/%77ebhooks/...`, `//v1/webhooks/...`, `/v1//webhooks/...`): percent-
 * decoded, empty segments dropped, any case; when it holds a token, that reading is what is logged.
 */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  // Nearly every url: neither the word nor an escape that could spell it.
  if (!path.includes('%') && !/webhooks/i.test(path)) return url;
  const segments = decodePath(path).split('/').filter(Boolean);
  const hook = segments.findIndex((segment, i) => segment.toLowerCase() === 'webhooks' && i + 2 < segments.length);
  if (hook < 0) return url;
  return `/${[...segments.slice(0, hook + 2), '[redacted]'].join('/')}${at < 0 ? '' : url.slice(at)}`;
}

/** Every `%XX` escape decoded (repeatedly: `%2577` is `%77` once decoded), a malformed one left as it is. */
function decodePath(path: string): string {
  let decoded = path;
  for (let round = 0; round < 3 && decoded.includes('%'); round++) {
    const next = decoded.replace(/%[0-9a-f]{2}/gi, (code) => String.fromCharCode(Number.parseInt(code.slice(1), 16)));
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
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

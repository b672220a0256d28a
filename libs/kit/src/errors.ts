/**
 * The one error type of the platform. `message` is public (it becomes the `{"error"}` body);
 * `cause` is private and only ever logged.
 */
export class AppError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, options: { cause?: unknown; headers?: Record<string, string> } = {}) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = status;
    this.headers = options.headers ?? {};
  }
}

export const badRequest = (message: string) => new AppError(400, message);
export const unauthorized = (message = 'Invalid or missing access token') => new AppError(401, message);
export const forbidden = (message = 'Missing permission') => new AppError(403, message);
export const notFound = (what = 'Resource') => new AppError(404, `${what} not found`);
export const conflict = (message: string) => new AppError(409, message);
export const unavailable = (message: string, cause?: unknown) => new AppError(503, message, { cause });

/** A 429 with the Retry-After header (whole seconds, at least 1). */
export const tooManyRequests = (retryAfterSeconds: number, message = 'Too many requests, slow down') =>
  new AppError(429, message, { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;

/** Public message of a status when the cause must stay private. */
export const PUBLIC_MESSAGES: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  429: 'Too many requests',
  500: 'Internal server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  504: 'Gateway timeout',
};

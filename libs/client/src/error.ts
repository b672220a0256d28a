/** Every failure of a call: the HTTP status and the server's `{"error"}` message (status 0: no answer at all). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** Seconds to wait before trying again, from the answer's Retry-After (a 429, a 503), when it had one. */
  readonly retryAfter: number | undefined;

  constructor(
    /** The HTTP status, or 0 when the server could not be reached or the answer was lost. */
    readonly status: number,
    message: string,
    /** `METHOD /path` of the route that failed. */
    readonly route: string,
    /** The answer's body as parsed JSON, when it had one. */
    readonly body?: unknown,
    options?: { cause?: unknown; retryAfter?: number },
  ) {
    super(message, options);
    this.retryAfter = options?.retryAfter;
  }
}

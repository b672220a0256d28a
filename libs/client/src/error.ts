/** Every failure of a call: the HTTP status and the server's `{"error"}` message (status 0: no answer at all). */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    /** The HTTP status, or 0 when the server could not be reached. */
    readonly status: number,
    message: string,
    /** `METHOD /path` of the route that failed. */
    readonly route: string,
    /** The answer's body as parsed JSON, when it had one. */
    readonly body?: unknown,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Errors that mean the request never reached the service: the connection was refused or never
 * made, so nothing was done there and a retry is safe.
 */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'FST_REPLY_FROM_GATEWAY_TIMEOUT', 'FST_REPLY_FROM_TIMEOUT']);

export type UpstreamFailure = { status: 503 | 502 | 504; error: string; reachedService: boolean };

/**
 * What a failed hop to a service means for the client. 503: nothing reached the service. 502: the
 * request was sent and the connection broke before an answer. 504: the service did not answer in
 * time. After a 502 or a 504 the write may have happened: the client retries with the same
 * Idempotency-Key.
 */
export function upstreamFailure(error: unknown, service: string): UpstreamFailure {
  const codes = errorCodes(error);
  if (codes.some((c) => NOT_CONNECTED.has(c))) {
    return { status: 503, error: `The ${service} service is unavailable`, reachedService: false };
  }
  if (codes.some((c) => TIMED_OUT.has(c))) {
    return { status: 504, error: `The ${service} service did not answer in time`, reachedService: true };
  }
  return { status: 502, error: `The ${service} service closed the connection without an answer`, reachedService: true };
}

/** The codes of an error and of its causes (reply-from wraps undici's errors). */
function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') codes.push(e.code);
  }
  return codes;
}

/**
 * The security headers of every answer, after OWASP's REST Security Cheat Sheet: an API of JSON
 * needs no more than these (helmet's defaults add headers meant for HTML pages and old browsers,
 * each one parsed by every client on every answer). A proxied answer keeps its service's own values
 * (media sets a sandboxing policy on files; /v1/docs sets a page's policy).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  // Nothing may be framed, run or loaded from an answer of the API.
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'referrer-policy': 'no-referrer',
  // Clients on other origins load media through the gateway.
  'cross-origin-resource-policy': 'cross-origin',
};

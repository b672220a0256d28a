import { MAX_PATH_PARAM_LENGTH, type RateTier, type RouteContract, type ServiceName } from '@chat/contracts';
import FindMyWay from 'find-my-way';

/** What the edge needs to know of a request: must it carry a token, and which window counts it. */
export interface RouteClass {
  auth: boolean;
  tier: RateTier;
  /** The webhook id for the Webhook tier (counted per webhook, not per IP). */
  webhookId?: string;
  /** multipart routes (uploads) have the service's own size limit, not the edge's JSON one. */
  multipart: boolean;
  /** The contract's path pattern (`/v1/channels/:id/messages`), what metrics count by; undefined when none matches. */
  pattern?: string;
  /** The service the route's contract names: the request goes there, whatever its prefix. */
  service?: ServiceName;
  /**
   * Why the path is refused (400): it would not be the path served. A "." or ".." segment (raw or
   * percent-encoded) is resolved by the services; a backslash is a slash to the URL parser that
   * builds the forwarded request (`/v1/webhooks/{id}\\{token}` ran a webhook in the General tier).
   */
  refused?: string;
}

type Method = RouteContract['method'] | 'HEAD';
const METHODS = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A segment that is "." or "..", spelled raw or with %2e in either case. */
const DOT_SEGMENT = /(^|\/)(\.|%2e){1,2}(\/|$)/i;
/** A percent-escape of a character that needs none (RFC 3986 unreserved): routers decode it. */
const ESCAPED_UNRESERVED = /%(2[dDeE]|3\d|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])/g;
/** Prefixes whose unknown paths count in the Auth tier: an endpoint added there is a password guess until proven otherwise. */
const AUTH_TIER_PREFIXES = ['/v1/auth'];

/**
 * Classifies requests by the route contracts. Matching ignores the query string, letter case,
 * duplicate and trailing slashes, so that no spelling of a path escapes its tier or its token
 * check; a HEAD is classified as its GET. A path under a proxied prefix that no contract
 * describes (yet) is authenticated and General (Auth under /v1/auth); any other unknown path is
 * left to the 404/405 answer, which needs no token. A path with dot segments is marked for refusal
 * and counted as an unknown path of its spelling (under /v1/auth, in the Auth tier).
 */
export function createRouteTable(routes: RouteContract[], proxiedPrefixes: string[]) {
  const router = FindMyWay({
    caseSensitive: false,
    ignoreTrailingSlash: true,
    ignoreDuplicateSlashes: true,
    // A file's url with a long name is still the public file route, not an unknown path that wants a token.
    maxParamLength: MAX_PATH_PARAM_LENGTH,
  });
  // A HEAD asks for a GET's headers: it is public, counted and limited as that GET is.
  for (const contract of routes)
    router.on(contract.method === 'GET' ? ['GET', 'HEAD'] : contract.method, contract.path, () => {}, contract);
  const prefixes = proxiedPrefixes.map((p) => p.toLowerCase());

  return function classify(method: string, url: string): RouteClass {
    // As the service's router reads it: `/v1/%61uth/x` is under /v1/auth, and needs its token and tier.
    const path = (url.split('?')[0] ?? '/').replace(ESCAPED_UNRESERVED, (escaped) => decodeURIComponent(escaped)).toLowerCase();
    if (DOT_SEGMENT.test(path)) return { ...unknownPath(method, path), refused: 'The path may not contain "." or ".." segments' };
    if (path.includes('\\')) return { ...unknownPath(method, path), refused: 'The path may not contain a backslash' };
    // An absolute-form target (`GET http://host/...`) is for proxies; this is an origin server.
    if (!path.startsWith('/')) return { ...unknownPath(method, path), refused: 'The request target must be a path starting with /' };
    const match = METHODS.has(method) ? safeFind(router, method as Method, path) : undefined;
    const contract = match?.store as RouteContract | undefined;
    if (contract) {
      const multipart = contract.multipart === true;
      const service = contract.service;
      const pattern = contract.path;
      if (contract.tier !== 'webhook') return { auth: contract.auth, tier: contract.tier, multipart, service, pattern };
      // The service answers 400 for an id that is not a UUID: no window of its own (no Redis key
      // per made-up id), only the client's General one.
      const webhookId = match?.params.id?.toLowerCase();
      if (!webhookId || !UUID.test(webhookId)) return { auth: contract.auth, tier: 'general', multipart, service, pattern };
      return { auth: contract.auth, tier: 'webhook', webhookId, multipart, service, pattern };
    }
    return unknownPath(method, path);
  };

  function unknownPath(method: string, path: string): RouteClass {
    const collapsed = path.replace(/\/{2,}/g, '/');
    const under = (p: string) => collapsed === p || collapsed.startsWith(`${p}/`);
    const proxied = prefixes.some(under);
    return { auth: proxied && method !== 'OPTIONS', tier: AUTH_TIER_PREFIXES.some(under) ? 'auth' : 'general', multipart: false };
  }
}

function safeFind(router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>, method: Method, path: string) {
  try {
    return router.find(method, path) ?? undefined;
  } catch {
    // A malformed path (bad percent-encoding) matches no contract.
    return undefined;
  }
}

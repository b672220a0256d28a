import type { RateTier, RouteContract } from '@chat/contracts';
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
}

type Method = RouteContract['method'] | 'HEAD';
const METHODS = new Set<string>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Classifies requests by the route contracts. Matching ignores the query string, letter case,
 * duplicate and trailing slashes, so that no spelling of a path escapes its tier or its token
 * check; a HEAD is classified as its GET. A path under a proxied prefix that no contract
 * describes (yet) is authenticated and General; any other unknown path is left to the 404/405
 * answer, which needs no token.
 */
export function createRouteTable(routes: RouteContract[], proxiedPrefixes: string[]) {
  const router = FindMyWay({ caseSensitive: false, ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  // A HEAD asks for a GET's headers: it is public, counted and limited as that GET is.
  for (const contract of routes)
    router.on(contract.method === 'GET' ? ['GET', 'HEAD'] : contract.method, contract.path, () => {}, contract);
  const prefixes = proxiedPrefixes.map((p) => p.toLowerCase());

  return function classify(method: string, url: string): RouteClass {
    const path = (url.split('?')[0] ?? '/').toLowerCase();
    const match = METHODS.has(method) ? safeFind(router, method as Method, path) : undefined;
    const contract = match?.store as RouteContract | undefined;
    if (contract) {
      const webhookId = contract.tier === 'webhook' ? match?.params.id?.toLowerCase() : undefined;
      return { auth: contract.auth, tier: contract.tier, webhookId, multipart: contract.multipart === true, pattern: contract.path };
    }
    const proxied = prefixes.some((p) => path === p || path.startsWith(`${p}/`));
    return { auth: proxied && method !== 'OPTIONS', tier: 'general', multipart: false };
  };
}

function safeFind(router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>, method: Method, path: string) {
  try {
    return router.find(method, path) ?? undefined;
  } catch {
    // A malformed path (bad percent-encoding) matches no contract.
    return undefined;
  }
}

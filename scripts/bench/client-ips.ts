/**
 * The client addresses the bench claims, one per request, as X-Forwarded-For.
 *
 * The gateway counts its rate tiers per client IP (General: 300 requests per 60 s). A load
 * generator is one client, so without this it would be throttled after 300 requests and the bench
 * would measure the 429 path. The bench platform trusts 127.0.0.1 as a proxy, so the gateway takes
 * the client from X-Forwarded-For and still does its full work per request (token check, one Redis
 * script, proxy), only spread over many windows. With a pool of N addresses each one sees
 * throughput × 60 / N requests a minute: 65,536 addresses stay under the General tier up to about
 * 327,000 req/s, and under the Auth tier (5 per 60 s) up to about 5,400 logins/s.
 */
export function clientIpCycle(poolSize: number): () => string {
  if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 2 ** 24) throw new Error(`IP pool size ${poolSize} is not in 1..2^24`);
  let next = 0;
  return () => {
    const i = next;
    next = (next + 1) % poolSize;
    return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
  };
}

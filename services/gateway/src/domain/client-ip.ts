import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const MAX_REMEMBERED_PEERS = 4_096;

/**
 * How a trusted proxy's X-Forwarded-For is read. `first` (the contract's order) is right only
 * behind a proxy that overwrites the header (deploy/edge ships one); behind proxies that append
 * (nginx's `$proxy_add_x_forwarded_for`, Envoy, Traefik), the first entry is the client's own
 * word, and `rightmost-untrusted` takes the right-most entry that is not a trusted proxy.
 */
export type ForwardedForMode = 'first' | 'rightmost-untrusted';

/**
 * The client IP of spec section 8: the first X-Forwarded-For entry (or, in `rightmost-untrusted`
 * mode, the right-most entry that is not a trusted proxy), then X-Real-IP, then the socket
 * address; the headers count only when the direct peer is a trusted proxy (addresses or CIDRs),
 * otherwise any client could pick its own rate-limit window.
 */
export function createClientIpResolver(trustedProxies: string[], mode: ForwardedForMode = 'first') {
  const trusted = new BlockList();
  for (const entry of trustedProxies) addEntry(trusted, entry);
  // Most requests come from a handful of peers (the load balancers): each is looked up once.
  const peers = new Map<string, { direct: string; trusted: boolean }>();
  const peerOf = (address: string) => {
    let known = peers.get(address);
    if (!known) {
      if (peers.size >= MAX_REMEMBERED_PEERS) peers.clear();
      const direct = normalize(address) ?? 'unknown';
      known = { direct, trusted: isTrusted(trusted, direct) };
      peers.set(address, known);
    }
    return known;
  };

  return function clientIp(peer: string | undefined, headers: Record<string, string | string[] | undefined>): string {
    const { direct, trusted: fromProxy } = peerOf(peer ?? '');
    if (!fromProxy) return direct;
    const forwarded = headerValues(headers['x-forwarded-for']);
    if (mode === 'rightmost-untrusted' && forwarded.length > 0) return rightmostUntrusted(forwarded, direct);
    return normalize(forwarded[0]) ?? normalize(first(headers['x-real-ip'])) ?? direct;
  };

  /**
   * Walks the chain from the peer outwards: each trusted proxy vouches for the entry it appended.
   * The first entry that is not a trusted proxy is the client; an entry that is not an address
   * ends the walk at the last proxy that could be believed.
   */
  function rightmostUntrusted(chain: string[], direct: string): string {
    let last = direct;
    for (let i = chain.length - 1; i >= 0; i--) {
      const address = normalize(chain[i]);
      if (!address) return last;
      if (!isTrusted(trusted, address)) return address;
      last = address;
    }
    return last;
  }
}

/**
 * The key a client is counted under: an IPv4 address as it is, an IPv6 address by its /64 (one
 * subscriber is routinely given a whole /64, so counting single addresses would give one client
 * 2^64 windows).
 */
export function rateSubject(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const prefix = ipaddr.IPv6.parse(ip).parts.slice(0, 4);
  return `${prefix.map((part) => part.toString(16)).join(':')}::/64`;
}

function addEntry(list: BlockList, entry: string): void {
  const [address = '', bits] = entry.split('/');
  const family = isIP(address);
  if (family === 0) throw new Error(`TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR`);
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (bits === undefined) list.addAddress(address, type);
  else list.addSubnet(address, Number(bits), type);
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** Every entry of a list header, across repeated header lines, in order. */
const headerValues = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value.join(',') : (value ?? '')).split(',').filter((v) => v.trim() !== '');

/** A valid IP without the IPv4-mapped IPv6 prefix, or undefined. */
function normalize(value: string | undefined): string | undefined {
  const candidate = value?.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  return candidate && isIP(candidate) ? candidate.toLowerCase() : undefined;
}

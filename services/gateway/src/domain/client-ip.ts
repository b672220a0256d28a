import { BlockList, isIP } from 'node:net';

const MAX_REMEMBERED_PEERS = 4_096;

/**
 * The client IP of spec section 8: the first X-Forwarded-For entry, then X-Real-IP, then the
 * socket address; the headers count only when the direct peer is a trusted proxy (addresses or
 * CIDRs), otherwise any client could pick its own rate-limit window.
 */
export function createClientIpResolver(trustedProxies: string[]) {
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
    const forwarded = first(headers['x-forwarded-for'])?.split(',')[0];
    return normalize(forwarded) ?? normalize(first(headers['x-real-ip'])) ?? direct;
  };
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

/** A valid IP without the IPv4-mapped IPv6 prefix, or undefined. */
function normalize(value: string | undefined): string | undefined {
  const candidate = value?.trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  return candidate && isIP(candidate) ? candidate.toLowerCase() : undefined;
}

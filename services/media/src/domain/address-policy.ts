import ipaddr from 'ipaddr.js';

/**
 * Which addresses the link-preview fetcher may connect to. Only globally routable unicast is
 * allowed: private, loopback, link-local (cloud metadata at 169.254.169.254 included), carrier-grade
 * NAT (100.64.0.0/10, where some clouds put their metadata), multicast, unique-local, reserved,
 * documentation and the rest are refused. IPv4-mapped and IPv4-compatible IPv6 forms are judged as
 * the IPv4 address they carry.
 */
export interface AddressPolicy {
  /** Whether a connection to this literal IP address may be made. */
  allows(address: string): boolean;
}

/**
 * `allowlist`: addresses or CIDR ranges allowed although not public. Empty in production; tests
 * name the loopback address of their local page server.
 */
export function addressPolicy(allowlist: readonly string[] = []): AddressPolicy {
  const allowed = allowlist.map(parseRange);
  return {
    allows(address) {
      const ip = parseAddress(address);
      if (!ip) return false;
      if (allowed.some(([range, bits]) => ip.kind() === range.kind() && ip.match(range, bits))) return true;
      return ip.range() === 'unicast';
    },
  };
}

/** An address in its plain form, an IPv4-mapped IPv6 address as its IPv4 one; undefined if not an IP. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return undefined;
  const ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
    // ::a.b.c.d (IPv4-compatible, deprecated) still reaches a.b.c.d on some stacks.
    const parts = v6.parts;
    if (parts.slice(0, 6).every((p) => p === 0) && (parts[6] ?? 0) !== 0)
      return ipaddr.fromByteArray(v6.toByteArray().slice(12)) as ipaddr.IPv4;
  }
  return ip;
}

function parseRange(value: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (value.includes('/')) return ipaddr.parseCIDR(value);
  const ip = ipaddr.parse(value);
  return [ip, ip.kind() === 'ipv4' ? 32 : 128];
}

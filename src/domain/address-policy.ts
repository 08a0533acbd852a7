import ipaddr from 'ipaddr.js';

/** `::/96`: IPv4-compatible IPv6 addresses, deprecated (RFC 4291 §2.5.5.1), which ipaddr.js calls unicast. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * Which addresses an outgoing delivery may connect to: public unicast only. Everything else
 * reaches the service's own side of the network (loopback, private and unique-local ranges,
 * link-local, where cloud metadata lives: 169.254.169.254, fd00:ec2::254), carrier-grade NAT,
 * multicast, or a reserved or translated range (NAT64, 6to4, Teredo) that may lead to one of
 * those. An IPv4-mapped IPv6 address is judged as the IPv4 address it maps; an IPv4-compatible
 * one (`::127.0.0.1`, written `::7f00:1` too) is refused whatever it embeds: no public service is
 * reached that way, and some stacks route it to the IPv4 address inside.
 */
export function isForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(canonical(address));
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    else if (v6.match(IPV4_COMPATIBLE)) return true;
  }
  return parsed.range() !== 'unicast';
}

/**
 * An IPv6 address written with a dotted quad in the form the WHATWG URL parser (and so the
 * connection) gives it: ipaddr.js 2.5 reads `::8.8.8.8` as `::ffff:8.8.8.8`, IPv4-mapped, where
 * it is `::808:808`, IPv4-compatible.
 */
function canonical(address: string): string {
  if (!address.includes(':') || !address.includes('.')) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

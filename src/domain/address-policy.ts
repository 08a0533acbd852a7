import ipaddr from 'ipaddr.js';

/**
 * Which addresses an outgoing delivery may connect to: public unicast only. Everything else
 * reaches the service's own side of the network (loopback, private and unique-local ranges,
 * link-local, where cloud metadata lives: 169.254.169.254, fd00:ec2::254), carrier-grade NAT,
 * multicast, or a reserved or translated range (NAT64, 6to4, Teredo) that may lead to one of
 * those. An IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
 */
export function isForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() !== 'unicast';
}

import ipaddr from 'ipaddr.js';
import { canonicalIpAddress } from './ip-address.ts';

/** The ranges a name in TOLLWATCH_TRUST_PROXY stands for, as Fastify's proxy-addr reads them. */
const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * A test of whether an address lies in any of `entries`: addresses, CIDR ranges (`10.0.0.0/8`,
 * `10.0.0.0/255.0.0.0`) and the names above, as TOLLWATCH_TRUST_PROXY lists them (already
 * checked by the configuration). An IPv4-mapped IPv6 address is tested as its IPv4 form.
 */
export function addressRanges(entries: readonly string[]): (address: string) => boolean {
  const ranges = entries.flatMap((entry) => NAMED_RANGES[entry] ?? [entry]).map(parseRange);
  return (address) => {
    const canonical = canonicalIpAddress(address);
    if (!canonical) return false;
    const parsed = ipaddr.parse(canonical);
    return ranges.some(([base, bits]) => base.kind() === parsed.kind() && parsed.match(base as never, bits));
  };
}

function parseRange(entry: string): Range {
  const slash = entry.indexOf('/');
  if (slash < 0) {
    const address = ipaddr.parse(canonicalIpAddress(entry) ?? entry);
    return [address, address.kind() === 'ipv4' ? 32 : 128];
  }
  const base = ipaddr.parse(entry.slice(0, slash));
  const mask = entry.slice(slash + 1);
  const bits = /^\d+$/.test(mask) ? Number(mask) : (ipaddr.IPv4.parse(mask).prefixLengthFromSubnetMask() ?? 32);
  return [base, bits];
}

/**
 * The network one party's connections are counted under: an IPv4 address, or the /64 of an
 * IPv6 one. An IPv6 subscriber is usually given a whole /64 and can use any address in it, so
 * counting single IPv6 addresses would count nothing. Text that is no address counts as itself.
 */
export function connectionNetwork(address: string): string {
  const canonical = canonicalIpAddress(address);
  if (!canonical) return address;
  if (!canonical.includes(':')) return canonical;
  const parts = ipaddr.IPv6.parse(canonical).parts.slice(0, 4);
  return `${parts.map((part) => part.toString(16)).join(':')}::/64`;
}

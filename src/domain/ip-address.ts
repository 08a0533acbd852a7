import ipaddr from 'ipaddr.js';

/**
 * The canonical text of an IPv4 or IPv6 address, or null. IPv4 must be a strict dotted quad
 * (no `127.1`, hex or leading zeros, which other tools read differently); IPv6 comes back in
 * RFC 5952 form, and an IPv4-mapped IPv6 address as its IPv4 form, so one attacker is one key.
 */
export function canonicalIpAddress(input: string): string | null {
  if (input.length === 0 || input.length > 45) return null;
  if (ipaddr.IPv4.isValidFourPartDecimal(input)) {
    if (input.split('.').some((part) => part.length > 1 && part.startsWith('0'))) return null;
    return ipaddr.IPv4.parse(input).toString();
  }
  // Zone ids, prefixes and brackets name more than an address.
  if (!/^[0-9a-fA-F:.]+$/.test(input) || !ipaddr.IPv6.isValid(input)) return null;
  const v6 = ipaddr.IPv6.parse(input);
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return v6.toRFC5952String();
}

import ipaddr from 'ipaddr.js';

// The longest IPv6 text: six full groups and a dotted quad.
const MAX_TEXT_LENGTH = 45;
// No zone ids (`%eth0`), prefixes (`/64`), brackets or whitespace: each names more than an address.
const IPV6_CHARACTERS = /^[0-9a-fA-F:.]+$/;

/**
 * The canonical text of an IPv4 or IPv6 address, or null. IPv4 must be a strict dotted quad
 * (no `127.1`, hex or leading zeros, which other tools read differently); IPv6 comes back in
 * RFC 5952 form, and an IPv4-mapped IPv6 address as its IPv4 form, so one attacker is one key.
 */
export function canonicalIpAddress(input: string): string | null {
  if (input.length === 0 || input.length > MAX_TEXT_LENGTH) return null;
  if (input.includes(':')) return canonicalIpv6(input);
  return strictIpv4(input)?.toString() ?? null;
}

function strictIpv4(text: string): ipaddr.IPv4 | null {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return null;
  // isValidFourPartDecimal lets `01.2.3.4` through; some tools read that octet as octal.
  if (text.split('.').some((part) => part.length > 1 && part.startsWith('0'))) return null;
  return ipaddr.IPv4.parse(text);
}

function canonicalIpv6(input: string): string | null {
  if (!IPV6_CHARACTERS.test(input)) return null;
  let text = input;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    // The dotted tail is rewritten as two hex groups before ipaddr.js sees it: it would accept
    // leading zeros there, and it reads `::1.2.3.4` (IPv4-compatible) as `::ffff:1.2.3.4`.
    const v4 = strictIpv4(tail);
    if (!v4) return null;
    const [a, b, c, d] = v4.octets as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  if (text.includes('.') || !ipaddr.IPv6.isValid(text)) return null;
  const v6 = ipaddr.IPv6.parse(text);
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return v6.toRFC5952String();
}

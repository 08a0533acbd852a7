import ipaddr from 'ipaddr.js';
import { canonicalIpAddress } from '../ip-address.ts';

/**
 * A range of source addresses in CIDR notation (`198.51.100.0/22`, `2001:db8::/32`), as an own-event
 * filter takes it (docs/api.md §8). Addresses are kept as canonical text, which a range cannot
 * be asked of in SQL on both stores alike; so the store narrows by the text every address of the
 * range begins with (its whole leading octets, or its first IPv6 group), and `includes` decides.
 */
export interface SourceRange {
  /** The range as written back: the canonical network address and its length. */
  text: string;
  /** Text every address of the range begins with; empty when none does (short prefixes). */
  textPrefix: string;
  includes(address: string): boolean;
}

/** The range `input` writes, or undefined when it is not one (a bare address is not). */
export function parseSourceRange(input: string): SourceRange | undefined {
  const slash = input.indexOf('/');
  if (slash < 0 || !/^\d{1,3}$/.test(input.slice(slash + 1))) return undefined;
  const base = canonicalIpAddress(input.slice(0, slash));
  const bits = Number(input.slice(slash + 1));
  if (!base) return undefined;
  const address = ipaddr.parse(base);
  if (bits > (address.kind() === 'ipv4' ? 32 : 128)) return undefined;
  const network = ipaddr.parse(networkOf(address, bits));
  const text = `${network.toString()}/${bits}`;
  return {
    text,
    textPrefix: textPrefixOf(network, bits),
    includes(candidate) {
      const canonical = canonicalIpAddress(candidate);
      if (!canonical) return false;
      const parsed = ipaddr.parse(canonical);
      return parsed.kind() === network.kind() && parsed.match(network as never, bits);
    },
  };
}

/** The range's first address, its host bits cleared. */
function networkOf(address: ipaddr.IPv4 | ipaddr.IPv6, bits: number): string {
  const bytes = address.toByteArray();
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    bytes[i] = bytes[i]! & (0xff << (8 - keep)) & 0xff;
  }
  return ipaddr.fromByteArray(bytes).toString();
}

/**
 * What the canonical text of every address in the range begins with: its whole octets and a dot
 * (IPv4: `198.51.`), or its first group and a colon when that group is whole and not zero (IPv6:
 * `2001:`; a zero group may be written `::`, so nothing else is safe to rely on).
 */
function textPrefixOf(network: ipaddr.IPv4 | ipaddr.IPv6, bits: number): string {
  if (network.kind() === 'ipv4') {
    const whole = Math.floor(bits / 8);
    return whole === 0 ? '' : `${(network as ipaddr.IPv4).octets.slice(0, whole).join('.')}${whole < 4 ? '.' : ''}`;
  }
  const first = (network as ipaddr.IPv6).parts[0]!;
  return bits >= 16 && first !== 0 ? `${first.toString(16)}:` : '';
}

import { canonicalIpAddress } from '../ip-address.ts';

/**
 * Names in the two DNS zones (docs/dns.md) and the keys they stand for. The address zone is laid
 * out as RFC 5782 says (IPv4 octets or IPv6 nibbles reversed); the number zone as ENUM (RFC 6116:
 * the digits of an E.164 number reversed, one label each), so a PBX's ENUM function given the
 * zone as its suffix asks exactly these names.
 */

export type ZoneKind = 'numbers' | 'addresses';

/** The zones' names, lower-case and without the final dot. */
export interface ZoneOrigins {
  numbers: string;
  addresses: string;
}

/** Where a name asked falls. */
export type ZonePlace =
  | { zone: ZoneKind; at: 'apex' }
  /** A number key (`+CC…`) or a canonical address: listed or not. */
  | { zone: ZoneKind; at: 'key'; key: string }
  /**
   * Fewer address labels than an address has (`2.0.192.<zone>`): an empty non-terminal, which
   * exists when an address below it is listed (RFC 8020), so it is never answered NXDOMAIN.
   */
  | { zone: ZoneKind; at: 'partial' }
  /** In the zone, but no key's name: nothing exists there. */
  | { zone: ZoneKind; at: 'nothing' };

const DIGIT_LABEL = /^[0-9]$/;
const OCTET_LABEL = /^(0|[1-9][0-9]{0,2})$/;
const NIBBLE_LABEL = /^[0-9a-f]$/;
// A number key as domain/phone-number.ts makes it from an international form: no ENUM name
// stands for the others (national forms, extensions), whose digits could be anyone's.
const INTERNATIONAL_KEY = /^\+[1-9][0-9]*$/;
/** Labels in an ENUM name at most: number keys hold at most 64 characters (docs/api.md §7). */
const MAX_DIGITS = 63;

/** A zone's name as configured, checked: lower-case labels of letters, digits and hyphens, no final dot. */
export function zoneOrigin(input: string): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (name.length === 0 || name.length > 200 || labels.some((l) => !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l))) {
    throw new Error(`"${input}" is not a DNS zone name (labels of letters, digits and hyphens, at most 200 characters)`);
  }
  return name;
}

/** Where `name` falls in the zones, or undefined outside both (answered REFUSED). Case does not matter. */
export function placeOf(name: string, origins: ZoneOrigins): ZonePlace | undefined {
  const asked = name.toLowerCase().replace(/\.$/, '');
  for (const zone of ['numbers', 'addresses'] as const) {
    const origin = origins[zone];
    if (asked === origin) return { zone, at: 'apex' };
    if (!asked.endsWith(`.${origin}`)) continue;
    const labels = asked.slice(0, -origin.length - 1).split('.');
    return zone === 'numbers' ? numberPlace(labels) : addressPlace(labels);
  }
  return undefined;
}

function numberPlace(labels: string[]): ZonePlace {
  if (labels.length > MAX_DIGITS || !labels.every((l) => DIGIT_LABEL.test(l))) return { zone: 'numbers', at: 'nothing' };
  const key = `+${labels.reverse().join('')}`;
  return INTERNATIONAL_KEY.test(key) ? { zone: 'numbers', at: 'key', key } : { zone: 'numbers', at: 'nothing' };
}

function addressPlace(labels: string[]): ZonePlace {
  if (labels.every((l) => OCTET_LABEL.test(l)) && labels.length <= 4) {
    if (labels.length < 4) return { zone: 'addresses', at: 'partial' };
    const key = canonicalIpAddress([...labels].reverse().join('.'));
    if (key) return { zone: 'addresses', at: 'key', key };
  }
  if (labels.every((l) => NIBBLE_LABEL.test(l)) && labels.length <= 32) {
    if (labels.length < 32) return { zone: 'addresses', at: 'partial' };
    const nibbles = [...labels].reverse().join('');
    const key = canonicalIpAddress(nibbles.match(/.{4}/g)!.join(':'));
    if (key) return { zone: 'addresses', at: 'key', key };
  }
  return { zone: 'addresses', at: 'nothing' };
}

/** The name a number key is listed under, or undefined for a key no ENUM name stands for. */
export function numberName(key: string, origin: string): string | undefined {
  if (!INTERNATIONAL_KEY.test(key) || key.length - 1 > MAX_DIGITS) return undefined;
  return `${[...key.slice(1)].reverse().join('.')}.${origin}`;
}

/**
 * The name an address is listed under. An IPv4 address has one (its octets); so does each IPv6
 * one (its 32 nibbles). An IPv4 address is also asked in its IPv4-mapped IPv6 form by resolvers
 * that only know IPv6 lists; `placeOf` reads that form back to the same key.
 */
export function addressName(address: string, origin: string): string | undefined {
  const canonical = canonicalIpAddress(address);
  if (!canonical) return undefined;
  if (!canonical.includes(':')) return `${canonical.split('.').reverse().join('.')}.${origin}`;
  return `${[...expandIpv6(canonical)].reverse().join('.')}.${origin}`;
}

/** The 32 hex digits of an IPv6 address in RFC 5952 form. */
function expandIpv6(address: string): string {
  const [head = '', tail] = address.split('::');
  const groups = (text: string) => (text === '' ? [] : text.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const middle = Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => g.padStart(4, '0')).join('');
}

/** The zone files `tollwatch dns-zone` writes (zone-files.ts); here, where the CLI can name them without loading the scoring. */
export const ZONE_FILE_FORMATS = ['rbldnsd', 'bind', 'rpz'] as const;
export type ZoneFileFormat = (typeof ZONE_FILE_FORMATS)[number];

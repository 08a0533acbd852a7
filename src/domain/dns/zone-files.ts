import { zoneDescription, type ZoneSettings } from './dns-zones.ts';
import type { KeptAggregate, SharedPeers } from '../intelligence/feed-service.ts';
import type { IpAggregate, NumberAggregate } from '../lookups/lookup-aggregates.ts';
import type { ScoringSettings } from '../intelligence/scores.ts';
import { reportedOf, type AcceptedSet } from '../intelligence/value-reports.ts';
import { addressListing, listingCode, listingNaptr, listingText, numberListing, withPeersListing, type Listing } from './zone-listing.ts';
import { addressName, numberName, type ZoneFileFormat, type ZoneKind } from './zone-names.ts';

/**
 * The zones as files, for operators who serve them from DNS servers of their own (docs/dns.md,
 * "Mirrors"): rbldnsd's data, a BIND zone file, and a response policy zone (RPZ) for a
 * resolver (Unbound, BIND). The same names, codes and texts as the server's answers, from the
 * same shared data set at the same threshold, scored at the start of the hour as feeds are.
 */


export interface ZoneFileSource {
  /** The instant scores are computed at. */
  scoredAt: Date;
  kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>>;
  /** What peers said that may be passed on, the operator's allowlist applied (docs/federation.md). */
  peers?: SharedPeers;
}

export interface ZoneFileOptions {
  format: ZoneFileFormat;
  zone: ZoneKind;
  settings: ZoneSettings;
  scoring: ScoringSettings;
  /** The SOA serial: the time of writing, so each new file's is higher. */
  serial: number;
  /** RPZ only: the policy zone's own name, under which the zone's names are triggers. */
  rpzOrigin?: string;
  /** The operator's accepted false-positive reports: a held-down score lists no name. */
  accepted?: AcceptedSet;
}

/** One listed name, what it answers. */
interface Entry {
  key: string;
  name: string;
  code: string;
  text: string;
  listing: Listing;
}

/** The lines of a zone file, written as the kept aggregates are read; how many names it lists is counted in `listed`. */
export async function* zoneFileLines(source: ZoneFileSource, options: ZoneFileOptions, listed: { count: number } = { count: 0 }): AsyncIterable<string> {
  const { format, zone, settings } = options;
  const origin = settings.origins[zone];
  yield `; Tollwatch ${zone} zone ${origin}: the shared data set at score ${settings.minScore} or more, scored at ${source.scoredAt.toISOString()} (docs/dns.md)`;
  yield* header(options, origin);
  // rbldnsd keeps IPv4 and IPv6 addresses in datasets of their own (ip4set, ip6trie): the IPv6
  // lines are held until the IPv4 ones are written (numbers have one dataset, dnset).
  const ipv6: string[] = [];
  if (format === 'rbldnsd') yield `$DATASET ${zone === 'numbers' ? 'dnset' : 'ip4set'}:tollwatch @`;
  if (zone === 'addresses') yield* lines(options, { key: '127.0.0.2', name: `2.0.0.127.${origin}`, code: '127.0.0.2', text: 'RFC 5782 test entry', listing: TEST });
  // Values peers reported that the shared data set keeps too: listed once, with both.
  const withLocal = new Set<string>();
  const list = function* (key: string, listing: Listing): Iterable<string> {
    if (listing.score < settings.minScore) return;
    const name = zone === 'numbers' ? numberName(key, origin) : addressName(key, origin);
    // A number key no ENUM name stands for (a national form, an extension) is in no zone.
    if (!name) return;
    listed.count += 1;
    const entry = { key, name, code: listingCode(listing, source.scoredAt), text: listingText(listing), listing };
    if (format === 'rbldnsd' && key.includes(':')) ipv6.push(...lines(options, entry));
    else yield* lines(options, entry);
  };
  for await (const kept of source.kept) {
    const reported = reportedOfKey(options, kept.key);
    const local =
      zone === 'numbers'
        ? numberListing(kept.aggregate as NumberAggregate, source.scoredAt, options.scoring, reported)
        : addressListing(kept.aggregate as IpAggregate, source.scoredAt, options.scoring, reported);
    const sightings = source.peers?.of(kept.key);
    if (sightings) withLocal.add(kept.key);
    yield* list(kept.key, sightings ? withPeersListing(local, sightings, reported) : local);
  }
  for (const { value, sightings } of source.peers ? await source.peers.values() : []) {
    if (!withLocal.has(value)) yield* list(value, withPeersListing(undefined, sightings, reportedOfKey(options, value)));
  }
  if (ipv6.length > 0) {
    yield '$DATASET ip6trie:tollwatch @';
    yield* ipv6;
  }
}

function reportedOfKey(options: ZoneFileOptions, key: string) {
  return options.accepted && reportedOf(options.accepted, options.zone === 'numbers' ? 'number' : 'ip', key);
}

const TEST: Listing = { score: 100, reasons: [], marked: false, lastSeen: '1970-01-01T00:00:00Z' };

function* header(options: ZoneFileOptions, origin: string): Iterable<string> {
  const { settings, serial, format, zone } = options;
  const soa = `${fqdn(settings.nameServer)} hostmaster.${origin}. ${serial} 3600 600 86400 ${settings.negativeTtlSeconds}`;
  if (format === 'rbldnsd') {
    // One `combined` data file: its common section, then a dataset per kind of name.
    yield `$SOA ${settings.negativeTtlSeconds} ${soa}`;
    yield `$NS ${settings.ttlSeconds} ${fqdn(settings.nameServer)}`;
    yield `$TTL ${settings.ttlSeconds}`;
    return;
  }
  const apex = format === 'rpz' ? options.rpzOrigin! : origin;
  yield `$ORIGIN ${apex}.`;
  yield `$TTL ${settings.ttlSeconds}`;
  yield `@ ${settings.negativeTtlSeconds} IN SOA ${format === 'rpz' ? `${fqdn(settings.nameServer)} hostmaster.${apex}. ${serial} 3600 600 86400 ${settings.negativeTtlSeconds}` : soa}`;
  yield `@ IN NS ${fqdn(settings.nameServer)}`;
  if (format === 'bind') {
    yield `@ IN TXT ${zoneDescription(zone, settings).map(quoted).join(' ')}`;
    return;
  }
  // Every name of the zone not listed below is NXDOMAIN (`CNAME .`); a listed name's own
  // records, the more specific trigger, win over the wildcard.
  yield `*.${origin}.${apex}. CNAME .`;
}

function* lines(options: ZoneFileOptions, entry: Entry): Iterable<string> {
  const { format, zone } = options;
  const { ttlSeconds } = options.settings;
  if (format === 'rbldnsd') {
    // ip4set and ip6trie list the address itself; dnset the name below the zone.
    const value = zone === 'numbers' ? entry.name.slice(0, -options.settings.origins.numbers.length - 1) : entry.key.includes(':') ? `${entry.key}/128` : entry.key;
    // rbldnsd would put the address in place of a `$` in the text; ours has none.
    yield `${value} :${entry.code}:${entry.text}`;
    return;
  }
  const owner = format === 'rpz' ? `${entry.name}.${options.rpzOrigin!}.` : `${entry.name}.`;
  yield `${owner} ${ttlSeconds} IN A ${entry.code}`;
  yield `${owner} ${ttlSeconds} IN TXT ${quoted(entry.text)}`;
  if (zone === 'numbers') {
    const naptr = listingNaptr(entry.key, entry.listing);
    yield `${owner} ${ttlSeconds} IN NAPTR ${naptr.order} ${naptr.preference} ${quoted(naptr.flags)} ${quoted(naptr.services)} ${quoted(naptr.regexp)} .`;
  }
}

function fqdn(name: string): string {
  return name.endsWith('.') ? name : `${name}.`;
}

/** A zone file's character-string: quoted, with `"` and `\` escaped (RFC 1035 §5.1). */
function quoted(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

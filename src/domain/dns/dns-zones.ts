import { NO_ALLOWLISTS, OPERATOR_LIST, type AllowlistMatcher, type AllowlistReader } from '../allowlists/allowlists.ts';
import { scoringHour } from '../intelligence/feed-service.ts';
import { EVERY_KEY_MAY_EXIST, NO_MEMO, type AggregateMemo, type IpAggregate, type KeyFilter, type LookupKind, type LookupsRepository, type NumberAggregate } from '../lookups/lookup-aggregates.ts';
import { TOP_USER_AGENTS } from '../lookups/lookup-service.ts';
import { DEFAULT_SCORING, type ReportedEvidence, type ScoringSettings } from '../intelligence/scores.ts';
import { NO_REPORTS, reportedOf, type AcceptedSet, type ReportedValues } from '../intelligence/value-reports.ts';
import { SHARED_SCOPE } from '../visibility.ts';
import { addressListing, listingCode, listingNaptr, listingText, numberListing, withPeersListing, type Listing } from './zone-listing.ts';
import type { PeerSighting, PeerValueKind } from '../federation/peer-evidence.ts';
import { placeOf, type ZoneKind, type ZoneOrigins } from './zone-names.ts';

/**
 * The two DNS zones' answers (docs/dns.md), without sockets or a packet format: a question's
 * name and type in, records and an outcome out. A question has no caller, so every answer is
 * read from the shared data set alone (docs/api.md §6), never from an account's own events.
 */

/** What the zones are configured with (TOLLWATCH_DNS_*, docs/operations.md). */
export interface ZoneSettings {
  origins: ZoneOrigins;
  /** A name is listed when its score reaches this (the feeds' `min_score`, docs/api.md §14). */
  minScore: number;
  /** TTL of listed names' records and of the apex's. */
  ttlSeconds: number;
  /** How long resolvers keep "not listed" (the SOA's minimum, RFC 2308). */
  negativeTtlSeconds: number;
  /** The server's name in the NS records and the SOA. */
  nameServer: string;
}

/** The records of an answer, shaped as DNS packet libraries take them. */
export type ZoneRecord =
  | { type: 'A'; name: string; ttl: number; data: string }
  | { type: 'NS'; name: string; ttl: number; data: string }
  | { type: 'TXT'; name: string; ttl: number; data: string[] }
  | { type: 'NAPTR'; name: string; ttl: number; data: ReturnType<typeof listingNaptr> }
  | { type: 'SOA'; name: string; ttl: number; data: { mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number } };

export type ZoneRcode = 'NOERROR' | 'NXDOMAIN' | 'REFUSED';

export interface ZoneAnswer {
  /** Which zone answered; undefined when the name is in neither. */
  zone: ZoneKind | undefined;
  rcode: ZoneRcode;
  answers: ZoneRecord[];
  /** The SOA, where the answer is negative (RFC 2308). */
  authorities: ZoneRecord[];
}

/** The address RFC 5782 §5 asks every IPv4 list to hold, for testing; 127.0.0.1 must never be listed. */
const TEST_ADDRESS = '127.0.0.2';

/** Reads the shared data set's aggregates through the lookups' memory and known keys. */
export interface SharedReads {
  repo: LookupsRepository;
  cache?: AggregateMemo;
  knownKeys?: KeyFilter;
  scoring?: ScoringSettings;
  now?: () => Date;
  /** The operator's accepted false-positive reports: a held-down score lists no name (docs/scoring.md, "Reports"). */
  reports?: ReportedValues;
  /** The operator's allowlist (docs/api.md §16): a name it holds is in neither zone. */
  allowlists?: AllowlistReader;
  /** What peers said that may be passed on (docs/federation.md): listed as the feeds list it. */
  peers?: { passableOf(kind: PeerValueKind, value: string): readonly PeerSighting[] | undefined };
}

const SHARED: readonly string[] = [SHARED_SCOPE];

export class DnsZones {
  readonly settings: ZoneSettings;
  private readonly repo: LookupsRepository;
  private readonly cache: AggregateMemo;
  private readonly knownKeys: KeyFilter;
  private readonly scoring: ScoringSettings;
  private readonly now: () => Date;
  private readonly reports: ReportedValues;
  private readonly listings = new WeakMap<object, { reported: ReportedEvidence | undefined; sightings: readonly PeerSighting[] | undefined; listed: ListedName }>();
  private readonly allowlists: AllowlistReader;
  private readonly peers: SharedReads['peers'];

  constructor(settings: ZoneSettings, reads: SharedReads) {
    this.settings = settings;
    this.repo = reads.repo;
    this.cache = reads.cache ?? NO_MEMO;
    this.knownKeys = reads.knownKeys ?? EVERY_KEY_MAY_EXIST;
    this.scoring = reads.scoring ?? DEFAULT_SCORING;
    this.now = reads.now ?? (() => new Date());
    this.reports = reads.reports ?? NO_REPORTS;
    this.allowlists = reads.allowlists ?? NO_ALLOWLISTS;
    this.peers = reads.peers;
  }

  /**
   * The answer to one question (`type` as DNS names it: `A`, `TXT`, `NAPTR`, `SOA`, `NS`, `ANY`,
   * …). At once, without a promise, when nothing must be read from the store (the lookups'
   * memory holds the key, or the known keys rule it out): most questions, answered with no turn of
   * the microtask queue each (one of the cuts of docs/performance.md, "The DNS zones").
   */
  answer(name: string, type: string): ZoneAnswer | Promise<ZoneAnswer> {
    const place = placeOf(name, this.settings.origins);
    if (!place) return { zone: undefined, rcode: 'REFUSED', answers: [], authorities: [] };
    const { zone } = place;
    const owner = name.replace(/\.$/, '');
    if (place.at === 'apex') return this.apex(zone, owner, type);
    if (place.at === 'partial') return this.noData(zone);
    if (place.at === 'nothing') return this.nxDomain(zone);
    const listing = this.listing(zone, place.key);
    return listing instanceof Promise ? listing.then((read) => this.keyAnswer(zone, owner, type, place.key, read)) : this.keyAnswer(zone, owner, type, place.key, listing);
  }

  private keyAnswer(zone: ZoneKind, owner: string, type: string, key: string, listed: ListedName | undefined): ZoneAnswer {
    if (!listed) return this.nxDomain(zone);
    const ttl = this.settings.ttlSeconds;
    // ANY gets one record set (RFC 8482): the A, which carries the decision.
    const answers: ZoneRecord[] =
      type === 'A' || type === 'ANY'
        ? [{ type: 'A', name: owner, ttl, data: listed.code }]
        : type === 'TXT'
          ? [{ type: 'TXT', name: owner, ttl, data: [listed.text] }]
          : type === 'NAPTR' && zone === 'numbers'
            ? [{ type: 'NAPTR', name: owner, ttl, data: listingNaptr(key, listed.listing) }]
            : [];
    return answers.length > 0 ? { zone, rcode: 'NOERROR', answers, authorities: [] } : this.noData(zone);
  }

  /** Whether a key is listed, and how: read from the shared data set only; a promise only when the store is read. */
  private listing(zone: ZoneKind, key: string): ListedName | undefined | Promise<ListedName | undefined> {
    if (zone === 'addresses' && key === TEST_ADDRESS) return TEST_ENTRY;
    // The operator's allowlist as kept in memory. A question never waits for it to be read:
    // while it is read again after a change (a few milliseconds), the list as last read answers.
    let operator = this.allowlists.kept(OPERATOR_LIST);
    if (!operator) {
      operator = this.allowlists.lastRead(OPERATOR_LIST);
      this.allowlists.load(OPERATOR_LIST).catch(() => {});
    }
    if (operator.size > 0 && allowlisted(operator, zone, key)) return undefined;
    // Without a promise while the accepted reports kept are fresh, as most answers are given.
    const accepted = this.reports.current();
    return accepted ? this.listingWith(zone, key, accepted) : this.reports.load().then((read) => this.listingWith(zone, key, read));
  }

  /** Whether a key is listed, the operator's allowlist aside. */
  private listingWith(zone: ZoneKind, key: string, accepted: AcceptedSet): ListedName | undefined | Promise<ListedName | undefined> {
    const kind: LookupKind = zone === 'numbers' ? 'number' : 'ip';
    const reported = reportedOf(accepted, kind, key);
    const sightings = this.peers?.passableOf(kind, key);
    const kept = this.cache.fresh(kind, key, SHARED);
    if (kept) return this.listed(kept.value, reported, sightings);
    if (!this.knownKeys.mayExist(kind, key)) return sightings && this.listed(undefined, reported, sightings);
    const read = kind === 'number' ? this.cache.read('number', key, SHARED, () => this.repo.phoneNumber([...SHARED], key)) : this.cache.read('ip', key, SHARED, () => this.repo.ipAddress([...SHARED], key, TOP_USER_AGENTS));
    return read.then((seen) => this.listed(seen, reported, sightings));
  }

  /**
   * A kept aggregate's listing, its code and its text, worked out once per aggregate the memory
   * keeps (as the lookups keep their answers: as of the read, for as long as the memory keeps
   * it); undefined under the threshold.
   */
  private listed(seen: NumberAggregate | IpAggregate | undefined, reported: ReportedEvidence | undefined, sightings?: readonly PeerSighting[]): ListedName | undefined {
    // Kept by the aggregate, or for a value only peers know by their sightings: both the same
    // objects for as long as they hold.
    const by = seen ?? sightings;
    if (!by) return undefined;
    const worked = this.listings.get(by);
    let listed = worked && worked.reported === reported && worked.sightings === sightings ? worked.listed : undefined;
    if (!listed) {
      // Scored as the feeds score (at the start of the hour), so a name is listed exactly when
      // it is in a trusted account's feed at the zone's threshold, and in the zone files.
      const at = scoringHour(this.now());
      const local = seen && ('userAgents' in seen ? addressListing(seen, at, this.scoring, reported) : numberListing(seen, at, this.scoring, reported));
      const listing = sightings ? withPeersListing(local, sightings, reported) : local!;
      listed = { listing, code: listingCode(listing, at), text: listingText(listing) };
      this.listings.set(by, { reported, sightings, listed });
    }
    return listed.listing.score >= this.settings.minScore ? listed : undefined;
  }

  private apex(zone: ZoneKind, owner: string, type: string): ZoneAnswer {
    const ttl = this.settings.ttlSeconds;
    const records: Record<string, ZoneRecord[]> = {
      SOA: [this.soa(zone)],
      NS: [{ type: 'NS', name: owner, ttl, data: this.settings.nameServer }],
      TXT: [{ type: 'TXT', name: owner, ttl, data: zoneDescription(zone, this.settings) }],
    };
    const answers = type === 'ANY' ? records.SOA! : (records[type] ?? []);
    return answers.length > 0 ? { zone, rcode: 'NOERROR', answers, authorities: [] } : this.noData(zone);
  }

  /** The zone's SOA; its minimum and its own TTL are the negative TTL (RFC 2308 §5). */
  soa(zone: ZoneKind): Extract<ZoneRecord, { type: 'SOA' }> {
    const { origins, nameServer, negativeTtlSeconds } = this.settings;
    // The zones change with every fold: the serial is the time, which only grows.
    const serial = Math.floor(this.now().getTime() / 1000) >>> 0;
    return {
      type: 'SOA',
      name: origins[zone],
      ttl: negativeTtlSeconds,
      data: { mname: nameServer, rname: `hostmaster.${origins[zone]}`, serial, refresh: 3600, retry: 600, expire: 86_400, minimum: negativeTtlSeconds },
    };
  }

  private nxDomain(zone: ZoneKind): ZoneAnswer {
    return { zone, rcode: 'NXDOMAIN', answers: [], authorities: [this.soa(zone)] };
  }

  private noData(zone: ZoneKind): ZoneAnswer {
    return { zone, rcode: 'NOERROR', answers: [], authorities: [this.soa(zone)] };
  }
}

/** A listed name's listing, with its A code and TXT text. */
interface ListedName {
  listing: Listing;
  code: string;
  text: string;
}

/** RFC 5782's test entry: listed, with the test address as its code. */
const TEST_ENTRY: ListedName = { listing: { score: 100, reasons: [], marked: false, lastSeen: '1970-01-01T00:00:00Z' }, code: TEST_ADDRESS, text: 'RFC 5782 test entry' };

function allowlisted(list: AllowlistMatcher, zone: ZoneKind, key: string): boolean {
  return (zone === 'numbers' ? list.number(key) : list.address(key)) !== undefined;
}

/** The apex's TXT: the code table, for whoever asks the zone what its answers mean. */
export function zoneDescription(zone: ZoneKind, settings: ZoneSettings): string[] {
  const what = zone === 'numbers' ? 'called numbers (ENUM layout, RFC 6116: E.164 digits reversed)' : 'source addresses (RFC 5782 layout: IPv4 octets or IPv6 nibbles reversed)';
  const mark = zone === 'numbers' ? 'an INVITE was seen (a call was tried, not only scanned)' : 'its User-Agent names a known SIP scanning tool';
  return [
    `Tollwatch zone of ${what}, from the shared data set of the honeypot fleet, and peers' reports the operator passes on (their TXT says so).`,
    `A name is listed when its score (0-100) is at least ${settings.minScore}; one not listed is NXDOMAIN.`,
    'A listed name answers A 127.0.B.C: B is the score rounded down to a multiple of 10;',
    `C is 2, plus 4 when ${mark}, plus 8 x freshness (0: last seen within 1 day, 1: 7 days, 2: 30 days, 3: longer).`,
    zone === 'numbers' ? 'TXT gives the score and its reasons; NAPTR (E2U+x-tollwatch) is there for ENUM functions to count.' : 'TXT gives the score and its reasons. 2.0.0.127 is the RFC 5782 test entry.',
    `Answers live ${settings.ttlSeconds} s, "not listed" ${settings.negativeTtlSeconds} s. See docs/dns.md of Tollwatch.`,
  ];
}

import type { IpAggregate, NumberAggregate } from '../lookups/lookup-aggregates.ts';
import { tagsOfUserAgents } from '../intelligence/scanner-tags.ts';
import { NO_LOCAL_EVIDENCE, REPORTED_CEILING, scoreOfAddress, scoreOfNumber, withPeers, type ReportedEvidence, type ScoringSettings } from '../intelligence/scores.ts';
import type { PeerSighting } from '../federation/peer-evidence.ts';

/**
 * What a listed name says (docs/dns.md, "What a listed name answers"): the `A` code a PBX or a
 * firewall acts on, the `TXT` a person reads and, for numbers, the `NAPTR` the ENUM functions
 * count. All of it is worked out from the score of docs/scoring.md and the kept aggregate, so a
 * name is listed exactly when the shared data set's score reaches the zone's threshold.
 */

/** A kept aggregate as the zones see it. */
export interface Listing {
  score: number;
  reasons: string[];
  /** A number: an INVITE was seen (a call was tried, not only scanned). An address: its User-Agents name a scanning tool. */
  marked: boolean;
  lastSeen: string;
  /**
   * What peers said is in the score (docs/federation.md, "Scores and publication"): `only` when
   * this server's honeypots never saw the value, `with` when it is added to their evidence.
   */
  peers?: 'only' | 'with';
}

/** The A code's freshness bands: last seen within a day, a week, 30 days, or longer ago. */
const FRESHNESS_BANDS_DAYS = [1, 7, 30] as const;
const DAY_MS = 86_400_000;
/** Bits of the code's last octet (docs/dns.md). */
const LISTED = 2;
const MARKED = 4;
const FRESHNESS_SHIFT = 3;
/** The longest character-string a TXT record holds (RFC 1035 §3.3). */
const TXT_STRING_BYTES = 255;

export function numberListing(seen: NumberAggregate, at: Date, scoring: ScoringSettings, reported?: ReportedEvidence): Listing {
  const { score, reasons } = scoreOfNumber(seen, at, scoring, reported);
  return { score, reasons, marked: (seen.sipMethods.INVITE ?? 0) > 0, lastSeen: seen.lastSeen };
}

export function addressListing(seen: IpAggregate, at: Date, scoring: ScoringSettings, reported?: ReportedEvidence): Listing {
  const { score, reasons } = scoreOfAddress(seen, at, scoring, reported);
  return { score, reasons, marked: tagsOfUserAgents(seen.userAgents).length > 0, lastSeen: seen.lastSeen };
}

/**
 * A listing with what peers said that may be passed on, as the feeds add it: to the local listing
 * when there is one, else as a value only peers know, scored by their part alone and last seen at
 * their latest say. An accepted report holds the whole down.
 */
export function withPeersListing(local: Listing | undefined, sightings: readonly PeerSighting[], reported: ReportedEvidence | undefined): Listing {
  const mixed = withPeers(local ? { score: local.score, reasons: local.reasons } : NO_LOCAL_EVIDENCE, sightings);
  const score = reported ? Math.min(mixed.score, REPORTED_CEILING) : mixed.score;
  if (local) return { ...local, score, reasons: mixed.reasons, peers: 'with' };
  // The text's head says the listing is the peers' alone: "not seen by this service's honeypots" goes.
  const lastSeen = sightings.map((s) => s.modified).reduce((a, b) => (b > a ? b : a));
  return { score, reasons: mixed.reasons.slice(NO_LOCAL_EVIDENCE.reasons.length), marked: false, lastSeen, peers: 'only' };
}

/**
 * The `A` answer, `127.0.B.C` (RFC 5782 keeps answers in 127.0.0.0/8): B is the score's band,
 * the score rounded down to a multiple of 10; C is 2 (listed), plus 4 when marked, plus 8 times
 * the freshness band (0 seen within a day, 1 a week, 2 30 days, 3 longer). A dial plan that
 * only reads addresses (Kamailio's `dns_query`) can decide on it without the TXT.
 */
export function listingCode(listing: Listing, at: Date): string {
  const band = Math.floor(listing.score / 10) * 10;
  const ageDays = Math.max(0, (at.getTime() - Date.parse(listing.lastSeen)) / DAY_MS);
  const freshness = FRESHNESS_BANDS_DAYS.findIndex((days) => ageDays <= days);
  const last = LISTED | (listing.marked ? MARKED : 0) | ((freshness < 0 ? FRESHNESS_BANDS_DAYS.length : freshness) << FRESHNESS_SHIFT);
  return `127.0.${band}.${last}`;
}

/**
 * The `TXT` answer: the score and as many of its reasons, strongest first, as one TXT string
 * holds, so that a PBX showing it (Asterisk's `TXTCIDNAME`) shows one readable line.
 */
export function listingText(listing: Listing): string {
  let text = `Tollwatch score ${listing.score}${listing.peers === 'only' ? ', reported by peers only' : listing.peers === 'with' ? ", with peers' reports" : ''}`;
  for (const [i, reason] of listing.reasons.entries()) {
    const next = `${text}${i === 0 ? ': ' : '; '}${reason}`;
    if (Buffer.byteLength(next) > TXT_STRING_BYTES) break;
    text = next;
  }
  return text;
}

/** The ENUM service of the number zone's NAPTR: an experimental type (RFC 6117 §3.2.1), so nothing routes on it by mistake. */
export const ENUM_SERVICE = 'E2U+x-tollwatch';

/**
 * The `NAPTR` of a listed number (RFC 6116): a terminal rule whose URI is the number itself with
 * the score, so a dial plan that counts these records finds one, and one that reads the URI by
 * mistake as a route is sent back to the same number, never elsewhere.
 */
export function listingNaptr(key: string, listing: Listing): { order: number; preference: number; flags: string; services: string; regexp: string; replacement: string } {
  return { order: 100, preference: 10, flags: 'u', services: ENUM_SERVICE, regexp: `!^.*$!tel:${key};tollwatch-score=${listing.score}!`, replacement: '' };
}

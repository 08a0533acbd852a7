import { createHash } from 'node:crypto';
import { RANGE_DIGITS } from '../number-range.ts';

/**
 * STIX 2.1 indicators of what the honeypots saw (docs/api.md §14 and §15): one per number key or
 * address, written alike by the STIX feed and the TAXII collections, so a platform that moves
 * from one to the other keeps its objects.
 */

/** What an indicator is of: a number key, an address, or a number range's prefix (number-range.ts). */
export type IndicatorKind = 'phone-numbers' | 'ip-addresses' | 'number-ranges';

/** The STIX object type a value is matched on; numbers have no standard one (docs/api.md §14). */
export const STIX_NUMBER_TYPE = 'x-tollwatch-phone-number';

/** What an indicator says of a value. */
export interface IndicatorFacts {
  value: string;
  score: number;
  first_seen: string;
  /** The tools an address's User-Agents name (docs/scoring.md, "Tags"). */
  tags?: string[];
  /** When the object was first published; never changes (STIX 2.1 §3.6). */
  created: string;
  modified: string;
  validUntil?: string;
  /** The peers whose say is in the score, each with the confidence it published (docs/taxii.md, docs/api.md §14). */
  peers?: PeerConfidence[];
}

/** One peer's say as an indicator passes it on: the peer's name and its `confidence`. */
export interface PeerConfidence {
  peer: string;
  confidence: number;
}

/** What an indicator passes on of the peers' says: the same in the STIX feed and in TAXII. */
export function peerConfidencesOf(sightings: readonly PeerConfidence[]): PeerConfidence[] {
  return sightings.map((s) => ({ peer: s.peer, confidence: s.confidence }));
}

/** The label of an indicator whose score holds what peers said (docs/taxii.md). */
export const PEER_REPORTED_LABEL = 'peer-reported';

export interface StixIndicator {
  type: 'indicator';
  spec_version: '2.1';
  id: string;
  created: string;
  modified: string;
  name: string;
  indicator_types: string[];
  pattern: string;
  pattern_type: 'stix';
  valid_from: string;
  valid_until?: string;
  confidence: number;
  labels?: string[];
  /** What peers said that is in the confidence (docs/federation.md); absent when it is this server's own evidence alone. */
  x_tollwatch_peers?: PeerConfidence[];
  revoked?: true;
}

/**
 * An indicator's id: name-based (UUIDv5-style over the value), so a value keeps its id from poll
 * to poll and a consumer updates rather than duplicates it. A TAXII object revoked and then seen
 * again is a new object (STIX 2.1 §3.6 forbids versions after a revocation): its `generation`
 * counts the revocations before it, and only generation 0 shares the STIX feed's id.
 */
export function indicatorId(kind: IndicatorKind, value: string, generation = 0): string {
  // A range's name space is the STIX feed's own (`phone-number-range:`), older than its collection.
  const name = kind === 'number-ranges' ? `phone-number-range:${value}` : `${kind}:${value}`;
  return `indicator--${nameUuid(generation === 0 ? name : `${name}#${generation}`)}`;
}

export function indicatorOf(kind: IndicatorKind, facts: IndicatorFacts, id = indicatorId(kind, facts.value)): StixIndicator {
  if (kind === 'number-ranges') return rangeIndicatorOf(facts.value, RANGE_DIGITS, facts, id);
  const objectType = kind === 'phone-numbers' ? STIX_NUMBER_TYPE : facts.value.includes(':') ? 'ipv6-addr' : 'ipv4-addr';
  const what = kind === 'phone-numbers' ? 'Number called by toll-fraud probes' : 'Source of toll-fraud probes';
  return {
    type: 'indicator',
    spec_version: '2.1',
    id,
    created: stixTime(facts.created),
    modified: stixTime(facts.modified),
    name: `${what}: ${facts.value}`,
    indicator_types: ['malicious-activity'],
    pattern: `[${objectType}:value = '${facts.value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`,
    pattern_type: 'stix',
    valid_from: stixTime(facts.first_seen),
    ...(facts.validUntil ? { valid_until: stixTime(facts.validUntil) } : {}),
    confidence: facts.score,
    // STIX labels are open vocabulary: the tools an address's User-Agents name, and whether
    // peers' reports are in the score.
    ...(labelsOf(facts).length > 0 ? { labels: labelsOf(facts) } : {}),
    ...(facts.peers && facts.peers.length > 0 ? { x_tollwatch_peers: facts.peers } : {}),
  };
}

function labelsOf(facts: IndicatorFacts): string[] {
  const labels = [...(facts.tags ?? [])];
  if (facts.peers && facts.peers.length > 0) labels.push(PEER_REPORTED_LABEL);
  return labels;
}

/**
 * A number range's indicator (docs/api.md §14, `ranges=include`): its pattern matches every number
 * of the block, `_` standing for one digit each (STIX 2.1 patterning's LIKE). Its id is name-based
 * over the prefix in a name space of its own, so it never collides with a number's; the feed and
 * the `number-ranges` TAXII collection give a range the same one.
 */
export function rangeIndicatorOf(prefix: string, openDigits: number, facts: Omit<IndicatorFacts, 'value' | 'tags'>, id = indicatorId('number-ranges', prefix)): StixIndicator {
  return {
    type: 'indicator',
    spec_version: '2.1',
    id,
    created: stixTime(facts.created),
    modified: stixTime(facts.modified),
    name: `Number range called by toll-fraud probes: ${prefix}${'X'.repeat(openDigits)}`,
    indicator_types: ['malicious-activity'],
    // A prefix is `+` and digits only (number-range.ts): nothing in it needs escaping, and no LIKE wildcard.
    pattern: `[${STIX_NUMBER_TYPE}:value LIKE '${prefix}${'_'.repeat(openDigits)}']`,
    pattern_type: 'stix',
    valid_from: stixTime(facts.first_seen),
    ...(facts.validUntil ? { valid_until: stixTime(facts.validUntil) } : {}),
    confidence: facts.score,
  };
}

/** An instant (`event_time`'s nine fraction digits, or ISO's three) to STIX's millisecond precision. */
export function stixTime(instant: string): string {
  return `${instant.slice(0, 23)}Z`;
}

/** A version-5-shaped UUID from a SHA-1 of a name in our own namespace. */
export function nameUuid(name: string): string {
  const h = createHash('sha1').update(`tollwatch:${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

import { createHash } from 'node:crypto';
import { feedEntryOf, peerEntryOf, rangeEntryOf, withPassedOn, type EntryDetail, type FeedEntry, type KeptAggregate } from './feed-service.ts';
import type { PeerSighting } from '../federation/peer-evidence.ts';
import type { IpAggregate, NumberAggregate, RangeAggregate } from '../lookups/lookup-aggregates.ts';
import type { ScoringSettings } from './scores.ts';
import { reportedOf, type AcceptedSet } from './value-reports.ts';
import { indicatorId, indicatorOf, peerConfidencesOf, stixTime, type IndicatorKind, type StixIndicator } from './stix-indicators.ts';

/**
 * The rules of the TAXII collections' versions (docs/taxii.md, "Versions"), without the job that
 * applies them (taxii-publication.ts): which values a collection holds, and when and how a value's
 * indicator gets a new version, a revocation or a new object. Pure functions of what the fold
 * keeps, the object last published and the time.
 */

/** A collection's present state of one value, as the store keeps it. */
export interface PublishedObject {
  value: string;
  generation: number;
  objectId: string;
  created: string;
  modified: string;
  revoked: boolean;
  /** A digest of the indicator as last published, `modified` aside: what tells a change. */
  fingerprint: string;
}

/** One new version to add: the object's state after it, and the indicator as served. */
export interface NewVersion {
  object: PublishedObject;
  body: StixIndicator;
}

/** A value the publisher looks at: what the fold keeps of it, if anything, and its object, if any. */
export interface Candidate {
  value: string;
  /** A range's aggregate in the `number-ranges` collection, a number's or an address's in the others. */
  kept: KeptAggregate<NumberAggregate | IpAggregate | RangeAggregate> | undefined;
  object: PublishedObject | undefined;
  /**
   * What peers said of a number or an address that may be passed on (docs/federation.md,
   * "Scores and publication"), if anything: added to its score as the feeds add it, and named.
   */
  peers?: readonly PeerSighting[];
}

export interface PublicationSettings {
  /** The score an indicator needs to be in the collection (TOLLWATCH_TAXII_MIN_SCORE). */
  minScore: number;
  scoring: ScoringSettings;
  /** The operator's accepted false-positive reports: scores held down (docs/scoring.md, "Reports"). */
  accepted?: AcceptedSet;
}

/**
 * What a value's next version is, if it has one. `scoredAt` is the start of the hour, as the
 * feeds score; `now` dates a revocation and a re-published object. `previous` is the body last
 * published, needed to revoke an object whose value the fold no longer keeps.
 */
export function nextVersion(
  kind: IndicatorKind,
  candidate: Candidate,
  settings: PublicationSettings,
  scoredAt: Date,
  now: Date,
  previous: StixIndicator | undefined,
): NewVersion | undefined {
  const { value, object, peers } = candidate;
  const entry = entryOf(kind, candidate, scoredAt, settings, { minScore: settings.minScore, versioned: true });
  const live = object && !object.revoked;
  if (!entry?.stix || !scores(entry.score, settings)) {
    if (!live || !previous) return undefined;
    const modified = laterThan(object.modified, now.toISOString());
    const body: StixIndicator = { ...previous, modified, revoked: true };
    return { object: { ...object, modified, revoked: true, fingerprint: fingerprintOf(body) }, body };
  }
  const { score, first_seen, tags, stix, valid_until: validUntil } = entry;
  const passedOn = peers && peerConfidencesOf(peers);
  if (!object || object.revoked) {
    // Generation 0 is the STIX feed's own object (its id and created); a later one starts now.
    const generation = object ? object.generation + 1 : 0;
    const created = generation === 0 ? stixTime(stix.created) : stixTime(now.toISOString());
    const modified = laterOf(stixTime(stix.modified), created);
    const body = indicatorOf(kind, { value, score, first_seen, tags, created, modified, validUntil, ...(passedOn ? { peers: passedOn } : {}) }, indicatorId(kind, value, generation));
    return { object: { value, generation, objectId: body.id, created, modified, revoked: false, fingerprint: fingerprintOf(body) }, body };
  }
  const body = indicatorOf(kind, { value, score, first_seen, tags, created: object.created, modified: stix.modified, validUntil, ...(passedOn ? { peers: passedOn } : {}) }, object.objectId);
  const fingerprint = fingerprintOf(body);
  if (fingerprint === object.fingerprint) return undefined;
  // STIX 2.1 §3.6: every new version has a later `modified` than the one before.
  body.modified = Date.parse(body.modified) > Date.parse(object.modified) ? body.modified : laterThan(object.modified, body.modified);
  return { object: { ...object, modified: body.modified, fingerprint }, body };
}

/** Whether a value is in the collection: present in the shared data set or passed on from peers, and scoring at least the threshold. */
export function inCollection(kind: IndicatorKind, candidate: Candidate, settings: PublicationSettings, scoredAt: Date): boolean {
  const entry = entryOf(kind, candidate, scoredAt, settings);
  return entry !== undefined && scores(entry.score, settings);
}

/**
 * A value scored as its feed scores it: a range as the phone-number feed's range entries
 * (`ranges=include`), which no accepted report holds down (reports name numbers and addresses);
 * a number or an address with what peers said that may be passed on, as the feeds add it.
 * Undefined when neither the shared data set nor a peer has it.
 */
function entryOf(kind: IndicatorKind, { value, kept, peers }: Candidate, scoredAt: Date, settings: PublicationSettings, detail?: EntryDetail): FeedEntry | undefined {
  if (kept && isRange(kept)) return rangeEntryOf(kept.key, kept.aggregate, scoredAt, settings.scoring, detail);
  const { accepted } = settings;
  const local = kept as KeptAggregate<NumberAggregate | IpAggregate> | undefined;
  if (peers && local) return withPassedOn(local, peers, scoredAt, settings.scoring, detail, accepted);
  if (peers) return peerEntryOf(value, peers, detail, accepted !== undefined && reportedOf(accepted, kind === 'phone-numbers' ? 'number' : 'ip', value) !== undefined);
  return local && feedEntryOf(local, scoredAt, settings.scoring, detail, settings.accepted);
}

function isRange(kept: NonNullable<Candidate['kept']>): kept is KeptAggregate<RangeAggregate> {
  return 'numberCount' in kept.aggregate;
}

function scores(score: number, { minScore }: PublicationSettings): boolean {
  return score >= minScore;
}

/** The digest of an indicator without its `modified`: equal digests, equal content. */
export function fingerprintOf(body: StixIndicator): string {
  const { modified: _modified, ...content } = body;
  return createHash('sha256').update(JSON.stringify(content)).digest('base64url').slice(0, 22);
}

/** `candidate` in STIX's millisecond form, or one millisecond past `before` when it is not later. */
function laterThan(before: string, candidate: string): string {
  const floor = Date.parse(before) + 1;
  return stixTime(new Date(Math.max(floor, Date.parse(candidate))).toISOString());
}

function laterOf(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

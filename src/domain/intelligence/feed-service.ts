import { tagsOfUserAgents } from './scanner-tags.ts';
import { createHmac, randomBytes } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { ServiceError } from '../errors.ts';
import { parseEventTimestamp } from '../events/event-timestamp.ts';
import type { FieldError } from '../field-error.ts';
import { queryText } from '../query-text.ts';
import type { IpAggregate, NumberAggregate, RangeAggregate } from '../lookups/lookup-aggregates.ts';
import { NO_BARRIER, type OwnWritesBarrier } from '../events/own-writes.ts';
import { indicatorTimes, indicatorValidUntil } from './indicator-versions.ts';
import { DEFAULT_SCORING, freshOfAddress, freshOfNumber, NO_LOCAL_EVIDENCE, rangePoints, REPORTED_CEILING, scoreOfAddress, scoreOfNumber, scoreOfRange, withPeers, type ScoringSettings } from './scores.ts';
import { FEED_TAG_KEY_BYTES } from '../accounts/server-secrets.ts';
import { readScopesOf, SHARED_SCOPE } from '../visibility.ts';
import { NO_REPORTS, reportedOf, type AcceptedSet, type ReportedValues } from './value-reports.ts';
import { NO_ALLOWLISTS, OPERATOR_LIST, type AllowlistMatcher, type AllowlistReader } from '../allowlists/allowlists.ts';
import type { PassableValue, PeerSighting, PeerValueKind } from '../federation/peer-evidence.ts';
import { peerConfidencesOf, type PeerConfidence } from './stix-indicators.ts';

/** Most entries one feed answer holds, most recently seen first (docs/api.md §14). */
export const MAX_FEED_ENTRIES = 100_000;

/** The score an entry needs when `min_score` is not given. */
export const DEFAULT_MIN_SCORE = 50;

/** The formats a feed is written in (docs/api.md §14); the HTTP layer maps media types to them. */
export const FEED_FORMATS = ['text', 'csv', 'json', 'stix'] as const;
export type FeedFormat = (typeof FEED_FORMATS)[number];

export type FeedKind = 'phone-numbers' | 'ip-addresses';

/** A feed's query, read and checked. */
export interface FeedQuery {
  minScore: number;
  /** Only entries last seen at or after this instant (`event_time` form). */
  since: string | undefined;
  format: FeedFormat;
  /**
   * Phone-number feed only: also list the number ranges that reach `min_score` (`include`), or
   * list them alone (`only`), docs/api.md §14. Opt-in, so a consumer that reads every line as a
   * number never gets a prefix.
   */
  ranges: FeedRanges;
}

/** The values of `ranges` (docs/api.md §14); `exclude` is the default. */
export const FEED_RANGES = ['exclude', 'include', 'only'] as const;
export type FeedRanges = (typeof FEED_RANGES)[number];

/** One entry of a feed: a number key or an address, with its score and span of sightings. */
export interface FeedEntry {
  value: string;
  score: number;
  seen_count: number;
  first_seen: string;
  last_seen: string;
  /** Addresses only: the tools their User-Agents name (docs/scoring.md, "Tags"); numbers keep no User-Agents. */
  tags?: string[];
  /**
   * In a JSON or STIX feed: the first hour at which the score falls below the feed's `min_score`
   * (docs/api.md §14), so that a consumer drops the entry then; absent with `min_score=0`.
   */
  valid_until?: string;
  /** In a STIX feed: the indicator's version (docs/api.md §14). */
  stix?: { created: string; modified: string };
  /**
   * Set on a number range's entry (`ranges=include`): `value` is then the range's prefix, a
   * block of 100 numbers (src/domain/number-range.ts), and this its distinct numbers seen.
   */
  range?: { numbers_seen: number };
  /**
   * The peers whose say is in the score (docs/federation.md, "Scores and publication"): only
   * those the operator lets be passed on, and never under TLP:AMBER or RED, each with the
   * confidence it published. Absent otherwise.
   */
  peers?: PeerConfidence[];
}

/** What the feeds may pass on of the peers' say (src/domain/federation/peer-evidence.ts). */
export interface PassedOnPeers {
  passableOf(kind: PeerValueKind, value: string): readonly PeerSighting[] | undefined;
  passableValues(kind: PeerValueKind): PassableValue[];
}

/** What the zone files pass on of the peers' say (docs/dns.md): by value, and every value less the operator's allowlist. */
export interface SharedPeers {
  of(value: string): readonly PeerSighting[] | undefined;
  values(): Promise<PassableValue[]>;
}

/** What a format needs of each entry beyond its score: `valid_until` (JSON), and the STIX version too. */
export interface EntryDetail {
  /** The feed's `min_score`, which `valid_until` is the end of. */
  minScore: number;
  versioned: boolean;
}

export interface Feed {
  /** A strong validator of exactly this answer: same tag, same bytes. */
  etag: string;
  /** The instant scores were computed at: the start of the current hour. */
  scoredAt: Date;
  entries: AsyncIterable<FeedEntry>;
  /** Whether range entries may be among them (`ranges=include` or `only`): the CSV format then has a `kind` column. */
  ranges: boolean;
}

/** A kept key with its aggregate, merged across the scopes read. */
export interface KeptAggregate<T> {
  key: string;
  aggregate: T;
  /** When the fold first made its row (the earliest, across scopes) and last changed one (migration 018). */
  publishedAt: string;
  changedAt: string;
}

/** Reads behind the feeds: the fold's position, and aggregates by recency. */
export interface FeedsRepository {
  /** How far the fold has counted events: any change to the aggregates moves it. */
  foldPosition(): Promise<number>;
  /** Numbers last seen at or after `since` in any of `scopes`, most recent first, each once. */
  recentNumbers(scopes: string[], since: string): AsyncIterable<KeptAggregate<NumberAggregate>>;
  /** Addresses likewise. */
  recentAddresses(scopes: string[], since: string): AsyncIterable<KeptAggregate<IpAggregate>>;
  /** Which of `keys` are kept in any of `scopes`, last seen at or after `since`: what recentNumbers or recentAddresses would read. */
  keptAmong(kind: FeedKind, scopes: string[], since: string, keys: string[]): Promise<Set<string>>;
  /**
   * Number ranges last seen at or after `since` in any of `scopes`, most recent first, each once,
   * merged across scopes exactly as a lookup's `range` is (LookupsRepository.numberRange).
   */
  recentRanges(scopes: string[], since: string): AsyncIterable<{ prefix: string; aggregate: RangeAggregate }>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const FAR_FUTURE = new Date(8.64e15);
const EPOCH = '1970-01-01T00:00:00.000000000Z';

/**
 * Blocklist feeds (docs/api.md §14): the numbers or addresses the caller may see whose score
 * reaches `min_score`. Scores are computed at the start of the current hour, so an answer is a
 * function of the fold's position, that hour and the query, and its ETag can be strong.
 */
export class FeedService {
  private readonly repo: FeedsRepository;
  private readonly ownWrites: OwnWritesBarrier;
  private readonly scoring: ScoringSettings;
  private readonly now: () => Date;
  private readonly tagKey: Uint8Array;
  private readonly reports: ReportedValues;
  private readonly allowlists: AllowlistReader;
  private readonly peers: PassedOnPeers | undefined;

  /**
   * `tagKey` keys the ETag: every instance of a deployment must be given the same one (the
   * store's `feed-tag` secret); without it, a key of this instance's own.
   */
  constructor(
    repo: FeedsRepository,
    ownWrites: OwnWritesBarrier = NO_BARRIER,
    scoring: ScoringSettings = DEFAULT_SCORING,
    now = () => new Date(),
    tagKey: Uint8Array = randomBytes(FEED_TAG_KEY_BYTES),
    reports: ReportedValues = NO_REPORTS,
    allowlists: AllowlistReader = NO_ALLOWLISTS,
    peers?: PassedOnPeers,
  ) {
    this.peers = peers;
    this.reports = reports;
    this.allowlists = allowlists;
    this.repo = repo;
    this.ownWrites = ownWrites;
    this.scoring = scoring;
    this.now = now;
    this.tagKey = tagKey;
  }

  /** Reads a feed's query parameters; one 422 names every bad one. `format` may come from elsewhere (Accept). */
  parseQuery(input: Readonly<Record<string, unknown>>, fallbackFormat: FeedFormat, kind: FeedKind = 'phone-numbers'): FeedQuery {
    const errors: FieldError[] = [];
    const refuse = (field: string, message: string) => void errors.push({ field, message });
    const text = (name: string) => queryText(input, name, refuse);
    // Addresses have no ranges: there `ranges` stays an unknown parameter.
    const known = kind === 'phone-numbers' ? ['min_score', 'since', 'format', 'ranges'] : ['min_score', 'since', 'format'];
    for (const name of Object.keys(input)) if (!known.includes(name)) refuse(name, 'is not a parameter of this route');
    let minScore = DEFAULT_MIN_SCORE;
    const min = text('min_score');
    if (min !== undefined) {
      if (/^\d{1,3}$/.test(min) && Number(min) <= 100) minScore = Number(min);
      else refuse('min_score', 'must be an integer from 0 to 100');
    }
    let since: string | undefined;
    const sinceText = text('since');
    if (sinceText !== undefined) {
      const parsed = parseEventTimestamp(sinceText, FAR_FUTURE);
      if ('error' in parsed) refuse('since', parsed.error);
      else since = parsed.iso;
    }
    let format = fallbackFormat;
    const formatText = text('format');
    if (formatText !== undefined) {
      if ((FEED_FORMATS as readonly string[]).includes(formatText)) format = formatText as FeedFormat;
      else refuse('format', `must be one of: ${FEED_FORMATS.join(', ')}`);
    }
    let ranges: FeedRanges = 'exclude';
    const rangesText = kind === 'phone-numbers' ? text('ranges') : undefined;
    if (rangesText !== undefined) {
      if ((FEED_RANGES as readonly string[]).includes(rangesText)) ranges = rangesText as FeedRanges;
      else refuse('ranges', `must be one of: ${FEED_RANGES.join(', ')}`);
    }
    if (errors.length > 0) throw new ServiceError('validation_failed', `invalid query: ${errors.map((e) => e.field).join(', ')}`, errors);
    return { minScore, since, format, ranges };
  }

  async feed(account: Account, kind: FeedKind, query: FeedQuery): Promise<Feed> {
    await this.ownWrites.ownWritesVisible(account.account_id);
    const scopes = readScopesOf(account);
    const scoredAt = scoringHour(this.now());
    const withRanges = kind === 'phone-numbers' && query.ranges !== 'exclude';
    const rangesOnly = withRanges && query.ranges === 'only';
    // A feed is a blocklist: what the operator allowlisted is in no one's, and what the caller
    // allowlisted is not in its own (its call guard's mirror loads it).
    const [position, operator, own] = await Promise.all([this.repo.foldPosition(), this.listOf(OPERATOR_LIST), this.listOf(account.account_id)]);
    // The operator's decisions change scores without the fold moving: their set is part of the tag.
    const reported = this.reports.current() ?? (await this.reports.load());
    // What peers said, where the operator lets it be passed on (docs/federation.md).
    const peerKind: PeerValueKind = kind === 'phone-numbers' ? 'number' : 'ip';
    // Peers name numbers, not ranges: a feed of ranges alone passes none on.
    const passedOn = rangesOnly ? [] : (this.peers?.passableValues(peerKind) ?? []);
    // Keyed: every input but the fold's position is known to the caller, so an unkeyed hash
    // would give away the position, how many events every account together has sent. The
    // lists' entries are in it, so any change to either list changes the tag.
    const hmac = createHmac('sha256', this.tagKey)
      // `ranges` only when asked for, so a request without it keeps the tag it had before ranges were published.
      .update(JSON.stringify([kind, scopes, position, scoredAt.toISOString(), this.scoring.halfLifeDays, query.minScore, query.since ?? null, query.format, reported.fingerprint, operator.fingerprint, own.fingerprint, ...(rangesOnly ? ['ranges-only'] : withRanges ? ['ranges'] : [])]));
    // What is passed on of the peers' say, as it stands now (a say also ends at its valid_until,
    // with nothing written): in value order, so that every instance tags it alike.
    if (passedOn.length > 0) {
      passedOn.sort((a, b) => (a.value < b.value ? -1 : 1));
      for (const { value, sightings } of passedOn) hmac.update(JSON.stringify([value, sightings.map((s) => [s.peer, s.trust, s.confidence, s.modified, s.validUntil ?? null])]));
    }
    const tag = hmac.digest('base64url').slice(0, 32);
    const since = laterOf(query.since, oldestThatCanReach(query.minScore, scoredAt, this.scoring));
    const detail = query.format === 'stix' || query.format === 'json' ? { minScore: query.minScore, versioned: query.format === 'stix' } : undefined;
    // Range rows change only as the fold moves, so the tag's fold position covers them too.
    const ranges = withRanges ? this.scoredRanges(scopes, since, scoredAt, query.minScore, detail, [operator, own]) : undefined;
    if (ranges && rangesOnly) return { etag: `"${tag}"`, scoredAt, entries: capped(ranges), ranges: true };
    const kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>> = kind === 'phone-numbers' ? this.repo.recentNumbers(scopes, since) : this.repo.recentAddresses(scopes, since);
    const peersOf = passedOn.length > 0 ? (value: string) => this.peers!.passableOf(peerKind, value) : undefined;
    const local = this.scored(withoutListed(kept, kind, [operator, own]), scoredAt, query.minScore, detail, reported, peersOf);
    const values = passedOn.length > 0 ? capped(byLastSeen(local, this.peersOnly(kind, scopes, since, query, passedOn, [operator, own], detail, reported))) : local;
    const entries = ranges ? capped(byLastSeen(values, ranges)) : values;
    return { etag: `"${tag}"`, scoredAt, entries, ranges: withRanges };
  }

  /**
   * The shared data set's kept aggregates that can reach `minScore` at the current hour, most
   * recently seen first, uncapped: what the DNS zone files list (docs/dns.md). A zone has no
   * caller, so it reads no scope but the shared one, as a trusted account's feed does.
   */
  sharedKept(kind: FeedKind, minScore: number): { scoredAt: Date; kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>>; peers?: SharedPeers } {
    const scoredAt = scoringHour(this.now());
    const since = oldestThatCanReach(minScore, scoredAt, this.scoring);
    const kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>> =
      kind === 'phone-numbers' ? this.repo.recentNumbers([SHARED_SCOPE], since) : this.repo.recentAddresses([SHARED_SCOPE], since);
    // Published to everyone: less what the operator allowlisted (docs/dns.md).
    const operator = this.listOf(OPERATOR_LIST);
    const peerKind: PeerValueKind = kind === 'phone-numbers' ? 'number' : 'ip';
    const peers = this.peers;
    const passedOn = peers?.passableValues(peerKind) ?? [];
    return {
      scoredAt,
      kept: (async function* () { yield* withoutListed(kept, kind, [await operator]); })(),
      ...(peers && passedOn.length > 0
        ? {
            peers: {
              of: (value: string) => peers.passableOf(peerKind, value),
              values: async () => {
                const list = await operator;
                return list.size === 0 ? passedOn : passedOn.filter(({ value }) => !(kind === 'phone-numbers' ? list.number(value) : list.address(value)));
              },
            },
          }
        : {}),
    };
  }

  private listOf(owner: string): Promise<AllowlistMatcher> {
    const kept = this.allowlists.kept(owner);
    return kept ? Promise.resolve(kept) : this.allowlists.load(owner);
  }

  /**
   * The ranges that reach `minScore`, less those an allowlist keeps out (AllowlistMatcher.numberRange).
   * Accepted reports are per value (a number or an address), so none holds a range down.
   */
  private async *scoredRanges(scopes: string[], since: string, scoredAt: Date, minScore: number, detail: EntryDetail | undefined, lists: AllowlistMatcher[]): AsyncIterable<FeedEntry> {
    const active = lists.filter((list) => list.size > 0);
    for await (const { prefix, aggregate } of this.repo.recentRanges(scopes, since)) {
      if (active.some((list) => list.numberRange(prefix))) continue;
      const entry = rangeEntryOf(prefix, aggregate, scoredAt, this.scoring, detail);
      if (entry.score >= minScore) yield entry;
    }
  }

  /**
   * Values only peers know, that may be passed on: scored by the peers' part, most recently
   * modified first. A value kept here too is the local stream's (scored with the peers there);
   * one whose own evidence is too old to be read is listed here, by the peers' part alone.
   */
  private async *peersOnly(
    kind: FeedKind,
    scopes: string[],
    since: string,
    query: FeedQuery,
    passedOn: PassableValue[],
    lists: AllowlistMatcher[],
    detail: EntryDetail | undefined,
    reported: AcceptedSet,
  ): AsyncIterable<FeedEntry> {
    const active = lists.filter((list) => list.size > 0);
    const listed = (value: string) => active.some((list) => (kind === 'phone-numbers' ? list.number(value) : list.address(value)));
    const candidates = passedOn.filter(({ value }) => !listed(value));
    const keptHere = candidates.length === 0 ? new Set<string>() : await this.repo.keptAmong(kind, scopes, since, candidates.map((c) => c.value));
    const entries: FeedEntry[] = [];
    for (const { value, sightings } of candidates) {
      if (keptHere.has(value)) continue;
      const entry = peerEntryOf(value, sightings, detail, reportedOf(reported, kind === 'phone-numbers' ? 'number' : 'ip', value) !== undefined);
      if (entry.score < query.minScore || (query.since !== undefined && entry.last_seen < query.since)) continue;
      entries.push(entry);
    }
    entries.sort((a, b) => (a.last_seen < b.last_seen ? 1 : a.last_seen > b.last_seen ? -1 : a.value < b.value ? 1 : -1));
    yield* entries;
  }

  private async *scored(
    kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>>,
    scoredAt: Date,
    minScore: number,
    detail: EntryDetail | undefined,
    reported: AcceptedSet,
    peersOf?: (value: string) => readonly PeerSighting[] | undefined,
  ): AsyncIterable<FeedEntry> {
    let count = 0;
    for await (const one of kept) {
      const sightings = peersOf?.(one.key);
      const entry = sightings ? withPassedOn(one, sightings, scoredAt, this.scoring, detail, reported) : feedEntryOf(one, scoredAt, this.scoring, detail, reported);
      if (entry.score < minScore) continue;
      yield entry;
      count += 1;
      if (count >= MAX_FEED_ENTRIES) return;
    }
  }
}

/**
 * A range's feed entry: scored as a lookup's `range` is (scoreOfRange). Range rows keep no
 * publication times, so its STIX `created` is its first sighting and its `modified` follows
 * its last (indicator-versions.ts with the last sighting as the last change).
 */
export function rangeEntryOf(prefix: string, aggregate: RangeAggregate, scoredAt: Date, scoring: ScoringSettings, detail?: EntryDetail): FeedEntry {
  const { score } = scoreOfRange(aggregate, scoredAt, scoring);
  const entry: FeedEntry = { value: prefix, score, seen_count: aggregate.seenCount, first_seen: aggregate.firstSeen, last_seen: aggregate.lastSeen, range: { numbers_seen: aggregate.numberCount } };
  if (detail !== undefined) {
    const facts = { fresh: rangePoints(aggregate), lastSeen: aggregate.lastSeen, changedAt: aggregate.lastSeen, scoredAt, minScore: detail.minScore, halfLifeDays: scoring.halfLifeDays };
    const times = detail.versioned ? indicatorTimes(facts) : { validUntil: indicatorValidUntil(facts) };
    if (times.validUntil !== undefined) entry.valid_until = times.validUntil;
    if ('modified' in times) entry.stix = { created: aggregate.firstSeen, modified: times.modified };
  }
  return entry;
}

/**
 * A kept value's entry with the peers' say that may be passed on added to its score, as a lookup
 * adds it (docs/scoring.md, "Peers"); an accepted report holds the whole down. Its STIX version
 * moves with the peers' latest, and it holds while either part alone would.
 */
export function withPassedOn(kept: KeptAggregate<NumberAggregate | IpAggregate>, sightings: readonly PeerSighting[], scoredAt: Date, scoring: ScoringSettings, detail: EntryDetail | undefined, reports: AcceptedSet | undefined): FeedEntry {
  const entry = feedEntryOf(kept, scoredAt, scoring, detail);
  const held = reports !== undefined && reportedOf(reports, 'userAgents' in kept.aggregate ? 'ip' : 'number', kept.key) !== undefined;
  const mixed = withPeers({ score: entry.score, reasons: [] }, sightings);
  entry.score = held ? Math.min(mixed.score, REPORTED_CEILING) : mixed.score;
  entry.peers = peerConfidencesOf(sightings);
  if (detail !== undefined) {
    const peersEnd = peersUntil(sightings);
    if (entry.valid_until !== undefined && !held) entry.valid_until = peersEnd === undefined ? undefined : peersEnd > entry.valid_until ? peersEnd : entry.valid_until;
    if (entry.valid_until === undefined) delete entry.valid_until;
    const modified = latestOf(sightings.map((s) => s.modified));
    if (entry.stix && modified > entry.stix.modified) entry.stix = { ...entry.stix, modified };
  }
  return entry;
}

/** A value only peers know, as a feed lists it: the peers' part as its score, their span as its sightings. */
export function peerEntryOf(value: string, sightings: readonly PeerSighting[], detail: EntryDetail | undefined, held: boolean): FeedEntry {
  const mixed = withPeers(NO_LOCAL_EVIDENCE, sightings);
  const first_seen = sightings.map((s) => s.validFrom).reduce((a, b) => (b < a ? b : a));
  const last_seen = latestOf(sightings.map((s) => s.modified));
  const entry: FeedEntry = { value, score: held ? Math.min(mixed.score, REPORTED_CEILING) : mixed.score, seen_count: 0, first_seen, last_seen, peers: peerConfidencesOf(sightings) };
  if (detail !== undefined) {
    const until = peersUntil(sightings);
    if (until !== undefined) entry.valid_until = until;
    if (detail.versioned) entry.stix = { created: first_seen, modified: last_seen };
  }
  return entry;
}

/** When the last of the peers' says ends; undefined when one has no end. */
function peersUntil(sightings: readonly PeerSighting[]): string | undefined {
  if (sightings.some((s) => s.validUntil === undefined)) return undefined;
  return latestOf(sightings.map((s) => s.validUntil!));
}

function latestOf(instants: string[]): string {
  return instants.reduce((a, b) => (b > a ? b : a));
}

/** Two entry streams, each most recently seen first, as one (numbers before ranges on a tie). */
async function* byLastSeen(a: AsyncIterable<FeedEntry>, b: AsyncIterable<FeedEntry>): AsyncIterable<FeedEntry> {
  const left = a[Symbol.asyncIterator]();
  const right = b[Symbol.asyncIterator]();
  let [l, r] = await Promise.all([left.next(), right.next()]);
  while (!l.done || !r.done) {
    if (!l.done && (r.done || l.value.last_seen >= r.value.last_seen)) {
      yield l.value;
      l = await left.next();
    } else if (!r.done) {
      yield r.value;
      r = await right.next();
    }
  }
}

/** The first MAX_FEED_ENTRIES of `entries`: numbers and ranges together are bounded as numbers alone are. */
async function* capped(entries: AsyncIterable<FeedEntry>): AsyncIterable<FeedEntry> {
  let count = 0;
  for await (const entry of entries) {
    yield entry;
    count += 1;
    if (count >= MAX_FEED_ENTRIES) return;
  }
}

/** `kept` less the values any of `lists` holds. */
async function* withoutListed(
  kept: AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>>,
  kind: FeedKind,
  lists: AllowlistMatcher[],
): AsyncIterable<KeptAggregate<NumberAggregate | IpAggregate>> {
  const active = lists.filter((list) => list.size > 0);
  if (active.length === 0) return yield* kept;
  for await (const one of kept) {
    if (!active.some((list) => (kind === 'phone-numbers' ? list.number(one.key) : list.address(one.key)))) yield one;
  }
}

/** The instant feeds score at: the start of the hour, so an answer changes with the fold and the hour only. */
export function scoringHour(now: Date): Date {
  return new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS);
}

/**
 * The oldest last sighting whose score can still reach `minScore` at `at`: fresh evidence scores
 * under 100, so one last seen more than half-life × log2(100 / (minScore − ½)) days ago rounds
 * below it. Bounds the rows a feed or a TAXII publication reads to the recent ones.
 */
export function oldestThatCanReach(minScore: number, at: Date, scoring: ScoringSettings): string {
  if (minScore <= 0.5) return EPOCH;
  const days = scoring.halfLifeDays * Math.log2(100 / (minScore - 0.5));
  const ms = at.getTime() - days * DAY_MS;
  return ms <= 0 ? EPOCH : nanoIso(new Date(ms));
}

/**
 * A kept aggregate as a feed entry scored at `scoredAt`. With `detail`, its `valid_until` (the
 * end of `detail.minScore`) too, and when versioned its STIX version: `created`, and the
 * `modified` of indicator-versions.ts.
 */
export function feedEntryOf(kept: KeptAggregate<NumberAggregate | IpAggregate>, scoredAt: Date, scoring: ScoringSettings, detail?: EntryDetail, reports?: AcceptedSet): FeedEntry {
  const { key, aggregate, publishedAt, changedAt } = kept;
  const isAddress = 'userAgents' in aggregate;
  const reported = reports && reportedOf(reports, isAddress ? 'ip' : 'number', key);
  const { score } = isAddress ? scoreOfAddress(aggregate, scoredAt, scoring, reported) : scoreOfNumber(aggregate, scoredAt, scoring, reported);
  const entry: FeedEntry = { value: key, score, seen_count: aggregate.seenCount, first_seen: aggregate.firstSeen, last_seen: aggregate.lastSeen };
  if (isAddress) entry.tags = tagsOfUserAgents(aggregate.userAgents);
  if (detail !== undefined) {
    // Held down by an accepted report, the evidence can score no more than the ceiling: its validity ends as that would.
    const fresh = Math.min(isAddress ? freshOfAddress(aggregate) : freshOfNumber(aggregate), reported ? REPORTED_CEILING : Infinity);
    const facts = { fresh, lastSeen: aggregate.lastSeen, changedAt, scoredAt, minScore: detail.minScore, halfLifeDays: scoring.halfLifeDays };
    const times = detail.versioned ? indicatorTimes(facts) : { validUntil: indicatorValidUntil(facts) };
    if (times.validUntil !== undefined) entry.valid_until = times.validUntil;
    if ('modified' in times) entry.stix = { created: publishedAt, modified: times.modified };
  }
  return entry;
}

/** An instant in `event_time`'s form (nine fraction digits), so text order is time order. */
function nanoIso(date: Date): string {
  return date.toISOString().replace('Z', '000000Z');
}

function laterOf(a: string | undefined, b: string): string {
  return a !== undefined && a > b ? a : b;
}

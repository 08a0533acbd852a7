import { tagsOfUserAgents } from '../intelligence/scanner-tags.ts';
import type { Account } from '../accounts/accounts.ts';
import { ServiceError } from '../errors.ts';
import { ABSENT_MARKER } from '../events/event-fields.ts';
import { SHARED_PART, type BulkItemError, type IpAddressAnswer, type NumberRangeEvidence, type PeerEvidenceAnswer, type PhoneNumberAnswer } from './lookup-answers.ts';
import { canonicalIpAddress } from '../ip-address.ts';
import { EVERY_KEY_MAY_EXIST, NO_MEMO, type AggregateMemo, type IpAggregate, type KeyFilter, type LookupsRepository, type NumberAggregate, type RangeAggregate } from './lookup-aggregates.ts';
import { addressLookupKey, NO_BARRIER, numberLookupKey, rangeLookupKey, type OwnWritesBarrier } from '../events/own-writes.ts';
import { rangeOfNumberKey } from '../number-range.ts';
import { normalisePhoneNumber, phoneNumberFacts } from '../phone-number.ts';
import { DEFAULT_SCORING, heldDown, NO_LOCAL_EVIDENCE, peerPoints, scoreOfAddress, scoreOfNumber, scoreOfRange, withPeers, type Score, type ScoringSettings } from '../intelligence/scores.ts';
import type { PeerSighting, PeerValueKind } from '../federation/peer-evidence.ts';
import { readScopesOf } from '../visibility.ts';
import { NO_REPORTS, reportedOf, type ReportedValues } from '../intelligence/value-reports.ts';
import type { ReportedEvidence } from '../intelligence/scores.ts';
import { matchOf, NO_ALLOWLISTS, type AllowlistReader } from '../allowlists/allowlists.ts';

/** User agents an address's answer names, most seen first. */
export const TOP_USER_AGENTS = 10;

/** Most values one bulk lookup may carry. */
export const MAX_BULK = 1000;

/**
 * Told of every lookup that found something, with exactly what was answered (docs/api.md §12,
 * `lookup.matched`). Called on the answer's path, so it must return at once and never throw.
 */
export interface LookupObserver {
  matched(account: Account, match: { subject: string; lookup: 'phone_number' | 'ip_address'; answer: Record<string, unknown> }): void;
}

/** What a LookupService works with besides its repository. */
export interface LookupOptions {
  /** Lets a lookup wait for the fold that counts its own account's acknowledged events. */
  ownWrites?: OwnWritesBarrier;
  /** Told of every match (the `lookup.matched` alerts). */
  observer?: LookupObserver;
  scoring?: ScoringSettings;
  now?: () => Date;
  /** Recent answers kept in memory, dropped by key when the fold changes them. */
  cache?: AggregateMemo;
  /** Which keys the aggregates may hold: a key they cannot is not read. */
  knownKeys?: KeyFilter;
  /**
   * With a read replica: the primary, read by an account whose own counted events the replica
   * may not have replayed yet (domain/lookups/replica-reads.ts), past the memory of lookups.
   */
  primary?: { repo: LookupsRepository; readsPrimary(accountId: string): boolean };
  /** The operator's accepted false-positive reports, kept in memory (docs/scoring.md, "Reports"). */
  reports?: ReportedValues;
  /** The accounts' own allowlists, kept in memory: an allowlisted answer says so, and raises no alert. */
  allowlists?: AllowlistReader;
  /** What the federation's peers said (docs/federation.md), kept in memory: a further kind of evidence. */
  peers?: PeerSightings;
}

/** The peers' live sightings of a value (src/domain/federation/peer-evidence.ts). */
export interface PeerSightings {
  of(kind: PeerValueKind, value: string): readonly PeerSighting[] | undefined;
}

/** Phone-number and source-address lookups over the data an account may see. */
export class LookupService {
  private readonly repo: LookupsRepository;
  private readonly ownWrites: OwnWritesBarrier;
  private readonly observer: LookupObserver | undefined;
  private readonly scoring: ScoringSettings;
  private readonly now: () => Date;
  private readonly cache: AggregateMemo;
  private readonly knownKeys: KeyFilter;
  private readonly primary: LookupOptions['primary'];
  private readonly reports: ReportedValues;
  private readonly allowlists: AllowlistReader;
  private readonly peers: PeerSightings | undefined;
  /**
   * The answer worked out for an aggregate the cache holds (all of it but the value as the
   * caller wrote it), made once per kept aggregate instead of once per lookup: the score, its
   * reasons and the number's facts are then as of the aggregate's read, at most the cache's
   * lifetime ago. Kept as long as the cache keeps the aggregate, and no longer, and worked out
   * again when the accepted reports of the value change (`reported`, compared by identity).
   */
  private readonly foundNumbers = new WeakMap<NumberAggregate, { reported: ReportedEvidence | undefined; found: Omit<Extract<PhoneNumberAnswer, { found: true }>, 'phone_number'> }>();
  /**
   * The found part with the range's evidence beside it, for the range aggregate and the found
   * part it was made with: each is kept and dropped apart, so the pair is made again when either changes.
   */
  private readonly foundInRanges = new WeakMap<NumberAggregate, { range: RangeAggregate; found: object; part: Omit<Extract<PhoneNumberAnswer, { found: true }>, 'phone_number'> }>();
  /** A range's evidence as answered, made once per kept range aggregate. */
  private readonly rangeParts = new WeakMap<RangeAggregate, NumberRangeEvidence>();
  private readonly foundAddresses = new WeakMap<IpAggregate, { reported: ReportedEvidence | undefined; found: Omit<Extract<IpAddressAnswer, { found: true }>, 'ip_address'> }>();

  /** Without a cache, every lookup reads the store; without a barrier, it reads what is folded. */
  constructor(repo: LookupsRepository, options: LookupOptions = {}) {
    this.repo = repo;
    this.ownWrites = options.ownWrites ?? NO_BARRIER;
    this.observer = options.observer;
    this.scoring = options.scoring ?? DEFAULT_SCORING;
    this.now = options.now ?? (() => new Date());
    this.cache = options.cache ?? NO_MEMO;
    this.knownKeys = options.knownKeys ?? EVERY_KEY_MAY_EXIST;
    this.primary = options.primary;
    this.reports = options.reports ?? NO_REPORTS;
    this.allowlists = options.allowlists ?? NO_ALLOWLISTS;
    this.peers = options.peers;
  }

  /** Looks up a number as written by the caller (already URL-decoded). */
  async phoneNumber(account: Account, input: string): Promise<PhoneNumberAnswer> {
    const number = normalisePhoneNumber(input);
    if (!number) throw new ServiceError('invalid_phone_number', invalidNumberMessage(input));
    const prefix = rangeOfNumberKey(number.key);
    // The range's key covers the number's: every own event about the number names its range too.
    const waiting = this.ownWrites.ownWritesVisible(account.account_id, prefix === null ? numberLookupKey(number.key) : rangeLookupKey(prefix));
    if (waiting) await waiting;
    const scopes = readScopesOf(account);
    const primary = this.primary?.readsPrimary(account.account_id) ? this.primary.repo : undefined;
    const kept = primary ? undefined : this.cache.fresh('number', number.key, scopes);
    const seen = primary
      ? await primary.phoneNumber(scopes, number.key)
      : kept
        ? kept.value
        : this.knownKeys.mayExist('number', number.key)
          ? await this.cache.read('number', number.key, scopes, () => this.repo.phoneNumber(scopes, number.key))
          : undefined;
    const inRange = prefix === null ? undefined : await this.rangeOf(primary, scopes, prefix);
    const listed = (this.allowlists.kept(account.account_id) ?? (await this.allowlists.load(account.account_id))).number(number.key);
    const sightings = this.peers?.of('number', number.key);
    if (!seen && !sightings) {
      const missing = { phone_number: number.written, found: false as const, message: 'No probes to this number have been seen.' };
      const inItsRange = inRange ? { ...missing, range: this.rangePart(prefix!, inRange) } : missing;
      return listed ? { ...inItsRange, allowlisted: true, allowlist_entry: matchOf(listed) } : inItsRange;
    }
    // A map read while the kept set is fresh; the store only once per its lifetime.
    const reported = reportedOf(this.reports.current() ?? (await this.reports.load()), 'number', number.key);
    if (!seen || sightings) {
      // Peers' evidence changes apart from the aggregates: such an answer is worked out each time.
      const facts = seen ? undefined : phoneNumberFacts(number.key);
      const part = seen
        ? { ...this.foundNumber(seen, number.key, reported), ...this.peered(scoreOfNumber(seen, this.now(), this.scoring), sightings!, reported) }
        : {
            found: true as const,
            ...peerSpan(sightings!),
            ...this.peered(NO_LOCAL_EVIDENCE, sightings!, reported),
            source_ip_count: 0,
            sip_methods: {},
            matched_forms: [],
            ...(facts ? { e164: facts.e164, country: facts.country, number_type: facts.number_type } : {}),
            message: `Not seen by this service's honeypots; ${sightings!.length === 1 ? '1 peer reports' : `${sightings!.length} peers report`} it.`,
          };
      const withRange = inRange ? { ...part, range: this.rangePart(prefix!, inRange) } : part;
      if (listed) return { phone_number: number.written, ...withRange, allowlisted: true, allowlist_entry: matchOf(listed) };
      const answer: PhoneNumberAnswer = { phone_number: number.written, ...withRange };
      this.observer?.matched(account, { subject: `number:${number.key}`, lookup: 'phone_number', answer });
      return answer;
    }
    let found = this.foundNumber(seen, number.key, reported);
    if (inRange) {
      let paired = this.foundInRanges.get(seen);
      if (paired?.range !== inRange || paired.found !== found) {
        paired = { range: inRange, found, part: { ...found, range: this.rangePart(prefix!, inRange) } };
        this.foundInRanges.set(seen, paired);
      }
      found = paired.part;
    }
    // Allowlisted: the evidence stays, the flag tells the caller not to block, and no alert is
    // raised. Its answer is this account's alone, so it shares no part with others' answers.
    if (listed) return { phone_number: number.written, ...found, allowlisted: true, allowlist_entry: matchOf(listed) };
    const answer: PhoneNumberAnswer = { phone_number: number.written, ...found, [SHARED_PART]: found };
    this.observer?.matched(account, { subject: `number:${number.key}`, lookup: 'phone_number', answer });
    return answer;
  }

  /** A seen number's found part, worked out once per kept aggregate and accepted reports. */
  private foundNumber(seen: NumberAggregate, key: string, reported: ReportedEvidence | undefined): Omit<Extract<PhoneNumberAnswer, { found: true }>, 'phone_number'> {
    const worked = this.foundNumbers.get(seen);
    let found = worked && worked.reported === reported ? worked.found : undefined;
    if (!found) {
      const facts = phoneNumberFacts(key);
      found = {
        found: true,
        seen_count: seen.seenCount,
        first_seen: seen.firstSeen,
        last_seen: seen.lastSeen,
        ...scoreOfNumber(seen, this.now(), this.scoring, reported),
        source_ip_count: seen.sourceIpCount,
        sip_methods: seen.sipMethods,
        matched_forms: seen.forms,
        ...(facts ? { e164: facts.e164, country: facts.country, number_type: facts.number_type } : {}),
        message: `Attackers have tried to call this number ${seen.seenCount} time${seen.seenCount === 1 ? '' : 's'}.`,
      };
      this.foundNumbers.set(seen, { reported, found });
    }
    return found;
  }

  /**
   * The score with the peers' say added (docs/scoring.md, "Peers"), and both parts: `local` is
   * this server's own evidence, before accepted reports, which hold the whole down.
   */
  private peered(local: Score, sightings: readonly PeerSighting[], reported: ReportedEvidence | undefined): { score: number; reasons: string[]; local_score: number; peers: PeerEvidenceAnswer } {
    const mixed = withPeers(local, sightings);
    const held = heldDown(mixed, reported);
    return {
      score: held.score,
      reasons: held.reasons,
      local_score: heldDown(local, reported).score,
      peers: {
        score: mixed.peerScore,
        sightings: sightings.map((s) => ({
          peer: s.peer,
          confidence: s.confidence,
          trust: s.trust,
          points: Math.round(peerPoints(s)),
          valid_from: s.validFrom,
          ...(s.validUntil ? { valid_until: s.validUntil } : {}),
        })),
      },
    };
  }

  /** A number range's aggregate as `scopes` see it, by the same memory and filter as a number's. */
  private rangeOf(primary: LookupsRepository | undefined, scopes: string[], prefix: string): Promise<RangeAggregate | undefined> | RangeAggregate | undefined {
    if (primary) return primary.numberRange(scopes, prefix);
    const kept = this.cache.fresh('range', prefix, scopes);
    if (kept) return kept.value;
    if (!this.knownKeys.mayExist('range', prefix)) return undefined;
    return this.cache.read('range', prefix, scopes, () => this.repo.numberRange(scopes, prefix));
  }

  /** A range's evidence as answered, worked out once per kept aggregate (scored as of its read, as a number is). */
  private rangePart(prefix: string, seen: RangeAggregate): NumberRangeEvidence {
    let part = this.rangeParts.get(seen);
    if (!part) {
      part = { prefix, numbers_seen: seen.numberCount, ...scoreOfRange(seen, this.now(), this.scoring) };
      this.rangeParts.set(seen, part);
    }
    return part;
  }

  /** Looks up many numbers; each answer as the single lookup's, or the item's own error. */
  async phoneNumbers(account: Account, inputs: unknown[]): Promise<Array<PhoneNumberAnswer | BulkItemError>> {
    return this.bulk(inputs, 'invalid_phone_number', (input) => this.phoneNumber(account, input));
  }

  /** Looks up many source addresses. */
  async ipAddresses(account: Account, inputs: unknown[]): Promise<Array<IpAddressAnswer | BulkItemError>> {
    return this.bulk(inputs, 'invalid_ip_address', (input) => this.ipAddress(account, input));
  }

  private async bulk<T>(
    inputs: unknown[],
    code: BulkItemError['error'],
    one: (input: string) => Promise<T>,
  ): Promise<Array<T | BulkItemError>> {
    if (inputs.length > MAX_BULK) throw new ServiceError('payload_too_large', `a bulk lookup holds at most ${MAX_BULK} values`);
    const answers: Array<T | BulkItemError> = [];
    for (const input of inputs) {
      if (typeof input !== 'string') {
        answers.push({ input: echoable(input), error: code, message: 'must be a string' });
        continue;
      }
      try {
        answers.push(await one(input));
      } catch (err) {
        if (!(err instanceof ServiceError) || err.code !== code) throw err;
        answers.push({ input, error: code, message: err.message });
      }
    }
    return answers;
  }

  /** Looks up a source address. */
  async ipAddress(account: Account, input: string): Promise<IpAddressAnswer> {
    const ip = canonicalIpAddress(input.trim());
    if (!ip) throw new ServiceError('invalid_ip_address', 'not an IPv4 or IPv6 address');
    const waiting = this.ownWrites.ownWritesVisible(account.account_id, addressLookupKey(ip));
    if (waiting) await waiting;
    const scopes = readScopesOf(account);
    const primary = this.primary?.readsPrimary(account.account_id) ? this.primary.repo : undefined;
    const kept = primary ? undefined : this.cache.fresh('ip', ip, scopes);
    const seen = primary
      ? await primary.ipAddress(scopes, ip, TOP_USER_AGENTS)
      : kept
        ? kept.value
        : this.knownKeys.mayExist('ip', ip)
          ? await this.cache.read('ip', ip, scopes, () => this.repo.ipAddress(scopes, ip, TOP_USER_AGENTS))
          : undefined;
    const listed = (this.allowlists.kept(account.account_id) ?? (await this.allowlists.load(account.account_id))).address(ip);
    const sightings = this.peers?.of('ip', ip);
    if (!seen && !sightings) {
      const missing = { ip_address: ip, found: false as const, message: 'No probes from this address have been seen.' };
      return listed ? { ...missing, allowlisted: true, allowlist_entry: matchOf(listed) } : missing;
    }
    const reported = reportedOf(this.reports.current() ?? (await this.reports.load()), 'ip', ip);
    if (!seen || sightings) {
      const part = seen
        ? { ...this.foundAddress(seen, reported), ...this.peered(scoreOfAddress(seen, this.now(), this.scoring), sightings!, reported) }
        : {
            found: true as const,
            ...peerSpan(sightings!),
            ...this.peered(NO_LOCAL_EVIDENCE, sightings!, reported),
            called_number_count: 0,
            user_agents: [],
            tags: [],
            transports: {},
            message: `Not seen by this service's honeypots; ${sightings!.length === 1 ? '1 peer reports' : `${sightings!.length} peers report`} it.`,
          };
      if (listed) return { ip_address: ip, ...part, allowlisted: true, allowlist_entry: matchOf(listed) };
      const answer: IpAddressAnswer = { ip_address: ip, ...part };
      this.observer?.matched(account, { subject: `ip:${ip}`, lookup: 'ip_address', answer });
      return answer;
    }
    const found = this.foundAddress(seen, reported);
    if (listed) return { ip_address: ip, ...found, allowlisted: true, allowlist_entry: matchOf(listed) };
    const answer: IpAddressAnswer = { ip_address: ip, ...found, [SHARED_PART]: found };
    this.observer?.matched(account, { subject: `ip:${ip}`, lookup: 'ip_address', answer });
    return answer;
  }

  /** A seen address's found part, worked out once per kept aggregate and accepted reports. */
  private foundAddress(seen: IpAggregate, reported: ReportedEvidence | undefined): Omit<Extract<IpAddressAnswer, { found: true }>, 'ip_address'> {
    const worked = this.foundAddresses.get(seen);
    let found = worked && worked.reported === reported ? worked.found : undefined;
    if (!found) {
      found = {
        found: true,
        seen_count: seen.seenCount,
        first_seen: seen.firstSeen,
        last_seen: seen.lastSeen,
        ...scoreOfAddress(seen, this.now(), this.scoring, reported),
        called_number_count: seen.calledNumberCount,
        user_agents: seen.userAgents,
        tags: tagsOfUserAgents(seen.userAgents),
        transports: seen.transports,
        message: `This address has sent ${seen.seenCount} probe${seen.seenCount === 1 ? '' : 's'}.`,
      };
      this.foundAddresses.set(seen, { reported, found });
    }
    return found;
  }
}

/** A value only peers know: its span of sightings is theirs (their earliest `valid_from`, latest `modified`), and no event names it. */
function peerSpan(sightings: readonly PeerSighting[]): { seen_count: 0; first_seen: string; last_seen: string } {
  let first = sightings[0]!.validFrom;
  let last = sightings[0]!.modified;
  for (const s of sightings) {
    if (s.validFrom < first) first = s.validFrom;
    if (s.modified > last) last = s.modified;
  }
  return { seen_count: 0, first_seen: first, last_seen: last };
}

/**
 * What of a non-string item is echoed back: scalars only. An array or object is the caller's
 * own structure, of any size and depth; sending it back could only cost us (serializing it) and
 * tells the caller nothing its index does not.
 */
function echoable(input: unknown): number | boolean | null {
  return typeof input === 'number' || typeof input === 'boolean' ? input : null;
}

/** Why a lookup's value is no number; a node's marker for "no number" is told as such. */
function invalidNumberMessage(input: string): string {
  return input.trim() === ABSENT_MARKER
    ? `${ABSENT_MARKER} is what a honeypot node writes when a probe carried no number: it names no number to look up`
    : 'a phone number is up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)';
}

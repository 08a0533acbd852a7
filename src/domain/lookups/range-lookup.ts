import { randomBytes } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import { ServiceError } from '../errors.ts';
import type { LookupsRepository } from './lookup-aggregates.ts';
import { RANGE_PREFIX_LENGTH } from './number-hash.ts';
import { NO_BARRIER, type OwnWritesBarrier } from '../events/own-writes.ts';
import { DEFAULT_SCORING, scoreOfNumber, scoreOfRange, type ScoringSettings } from '../intelligence/scores.ts';
import { rangeOfNumberKey } from '../number-range.ts';
import { readScopesOf } from '../visibility.ts';

/**
 * Every range answer holds at least this many entries, real and padding alike: with 16⁵ ranges a
 * range rarely holds more than a few real numbers, so nearly every answer is this size and its
 * length tells an observer nothing about which range was asked (docs/api.md §13).
 */
export const RANGE_MIN_ENTRIES = 32;

/** Most real entries one range answer holds; beyond it a range is cut, in hash order. */
export const RANGE_MAX_ENTRIES = 4096;

const PREFIX = new RegExp(`^[0-9a-fA-F]{${RANGE_PREFIX_LENGTH}}$`);

/** One hash of a range: a real number (`seen_count` ≥ 1) or padding (`seen_count` 0, score 0). */
export interface RangeEntry {
  /** The hash's last 59 hex digits, lower case. */
  suffix: string;
  seen_count: number;
  score: number;
  /** The score of the number's range (docs/scoring.md, "Ranges"); 0 for a number in none, and for padding. */
  range_score: number;
}

export interface RangeAnswer {
  prefix: string;
  entries: RangeEntry[];
}

/**
 * Range lookups (docs/api.md §13): the caller sends 5 hex digits of a number key's SHA-256 and
 * gets every visible number of that range, so the server never learns which one was checked.
 */
export class RangeLookupService {
  private readonly repo: LookupsRepository;
  private readonly ownWrites: OwnWritesBarrier;
  private readonly scoring: ScoringSettings;
  private readonly now: () => Date;

  constructor(repo: LookupsRepository, ownWrites: OwnWritesBarrier = NO_BARRIER, scoring: ScoringSettings = DEFAULT_SCORING, now = () => new Date()) {
    this.repo = repo;
    this.ownWrites = ownWrites;
    this.scoring = scoring;
    this.now = now;
  }

  async phoneNumbers(account: Account, input: string): Promise<RangeAnswer> {
    if (!PREFIX.test(input)) {
      throw new ServiceError('invalid_range_prefix', `a range prefix is exactly ${RANGE_PREFIX_LENGTH} hexadecimal digits of a SHA-256`);
    }
    const prefix = input.toLowerCase();
    await this.ownWrites.ownWritesVisible(account.account_id);
    const scopes = readScopesOf(account);
    const found = await this.repo.numbersByHashPrefix(scopes, prefix, RANGE_MAX_ENTRIES);
    const now = this.now();
    // Numbers of one hash range fall in different number ranges, nearly always one each: each
    // range is read once all the same.
    const rangeScores = new Map<string, number>();
    const entries: RangeEntry[] = [];
    for (const { hash, key, aggregate } of found) {
      const range = rangeOfNumberKey(key);
      let rangeScore = 0;
      if (range !== null) {
        if (!rangeScores.has(range)) {
          const seen = await this.repo.numberRange(scopes, range);
          rangeScores.set(range, seen ? scoreOfRange(seen, now, this.scoring).score : 0);
        }
        rangeScore = rangeScores.get(range)!;
      }
      entries.push({ suffix: hash.slice(RANGE_PREFIX_LENGTH), seen_count: aggregate.seenCount, score: scoreOfNumber(aggregate, now, this.scoring).score, range_score: rangeScore });
    }
    for (let i = entries.length; i < paddedSize(entries.length); i += 1) entries.push({ suffix: randomSuffix(), seen_count: 0, score: 0, range_score: 0 });
    // In hash order, so where padding sits says nothing either.
    entries.sort((a, b) => (a.suffix < b.suffix ? -1 : a.suffix > b.suffix ? 1 : 0));
    return { prefix, entries };
  }
}

/** Entries an answer with `real` real ones holds: RANGE_MIN_ENTRIES, or the next power of two. */
export function paddedSize(real: number): number {
  let size = RANGE_MIN_ENTRIES;
  while (size < real) size *= 2;
  return size;
}

function randomSuffix(): string {
  return randomBytes(32).toString('hex').slice(RANGE_PREFIX_LENGTH);
}

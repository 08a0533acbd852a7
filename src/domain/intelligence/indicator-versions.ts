import { decayWeight, pointsToScore } from './scores.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Hours the formula's answer is moved to agree with the rounded score: one or two at a boundary, bounded. */
const NUDGES = 48;

/**
 * When a feed entry, as a STIX indicator (docs/api.md §14), last changed and when it stops
 * holding. A feed scores at the start of each hour, so an entry's confidence changes in two
 * ways: the fold changes its aggregate (`changedAt`), or decay lowers its score from one hour
 * to the next with no new event. STIX 2.1 wants every change to come with a later `modified`,
 * and the same object with the same `modified` otherwise: so `modified` is the later of the
 * fold's change and the first hour at which the score had its present value, the same on every
 * poll until the score moves again. `validUntil` is the first hour whose score falls below the
 * feed's threshold: consumers drop the entry then on their own, even if they never poll again.
 *
 * The score is round(fresh × ½^(age / half-life)) (docs/scoring.md), so both hours follow from
 * the score's formula; each is then checked against it, an hour either way, so that rounding at
 * a boundary never makes it disagree with what the feed shows.
 */
export interface IndicatorTimes {
  /** ISO instant: the later of the fold's last change and the hour the present score began. */
  modified: string;
  /** ISO instant: the first hour at which the score is below the threshold; absent when it never is (threshold 0). */
  validUntil?: string;
}

export interface IndicatorFacts {
  /** Points of the evidence before decay (scores.ts numberPoints or ipPoints). */
  fresh: number;
  lastSeen: string;
  /** When the fold last changed the aggregate. */
  changedAt: string;
  /** The hour the feed scores at. */
  scoredAt: Date;
  minScore: number;
  halfLifeDays: number;
}

export function indicatorTimes(facts: IndicatorFacts): IndicatorTimes {
  const times: IndicatorTimes = { modified: indicatorModified(facts) };
  const validUntil = indicatorValidUntil(facts);
  if (validUntil !== undefined) times.validUntil = validUntil;
  return times;
}

/** IndicatorTimes' `modified` alone. */
export function indicatorModified(facts: IndicatorFacts): string {
  const lastSeen = Date.parse(facts.lastSeen);
  const scoreAt = scoreAtOf(facts, lastSeen);
  const scoredAt = facts.scoredAt.getTime();
  const changedAt = Date.parse(facts.changedAt);
  const current = scoreAt(scoredAt);

  // A poll at time P shows the score at the hour P falls in. Right after the change, polls show
  // the score of the change's own hour; if that is still the score, the change is the version.
  let modified = changedAt;
  if (scoreAt(Math.floor(changedAt / HOUR_MS) * HOUR_MS) !== current) {
    // Else the score dropped to `current` once fresh × weight < current + ½, and the first hour
    // after that instant is the first poll that showed it.
    let since = firstHourAfter(instantBelow(facts, lastSeen, current + 0.5));
    for (let step = 0; step < NUDGES && since - HOUR_MS > changedAt && scoreAt(since - HOUR_MS) === current; step++) since -= HOUR_MS;
    for (let step = 0; step < NUDGES && since < scoredAt && scoreAt(since) !== current; step++) since += HOUR_MS;
    modified = Math.max(changedAt, Math.min(since, scoredAt));
  }
  return new Date(modified).toISOString();
}

/**
 * IndicatorTimes' `validUntil` alone (`changedAt` plays no part): what the JSON feed gives each
 * entry as `valid_until`, so that a firewall's element times out when the feed would drop it.
 */
export function indicatorValidUntil(facts: Omit<IndicatorFacts, 'changedAt'>): string | undefined {
  if (facts.minScore <= 0) return undefined;
  const lastSeen = Date.parse(facts.lastSeen);
  const scoreAt = scoreAtOf(facts, lastSeen);
  const scoredAt = facts.scoredAt.getTime();
  let until = firstHourAfter(instantBelow(facts, lastSeen, facts.minScore - 0.5));
  until = Math.max(until, scoredAt + HOUR_MS);
  for (let step = 0; step < NUDGES && until - HOUR_MS > scoredAt && scoreAt(until - HOUR_MS) < facts.minScore; step++) until -= HOUR_MS;
  for (let step = 0; step < NUDGES && scoreAt(until) >= facts.minScore; step++) until += HOUR_MS;
  return new Date(until).toISOString();
}

/** The rounded score the feed shows at instant `t` (ms), as docs/scoring.md computes it. */
function scoreAtOf(facts: Pick<IndicatorFacts, 'fresh' | 'halfLifeDays'>, lastSeen: number): (t: number) => number {
  return (t) => pointsToScore(facts.fresh, decayWeight((t - lastSeen) / DAY_MS, facts.halfLifeDays));
}

/** The instant (ms) at which fresh × weight falls to `level`; the last sighting itself when it starts below. */
function instantBelow(facts: Pick<IndicatorFacts, 'fresh' | 'halfLifeDays'>, lastSeen: number, level: number): number {
  if (level <= 0 || facts.fresh <= level) return lastSeen;
  return lastSeen + facts.halfLifeDays * Math.log2(facts.fresh / level) * DAY_MS;
}

/** The first whole hour strictly after `t`. */
function firstHourAfter(t: number): number {
  return Math.floor(t / HOUR_MS) * HOUR_MS + HOUR_MS;
}

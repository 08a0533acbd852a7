import type { IpAggregate, NumberAggregate, RangeAggregate } from '../lookups/lookup-aggregates.ts';

/**
 * How strongly the kept evidence says a number or address is used in toll fraud: an integer 0–100
 * and the facts behind it (docs/scoring.md). A pure function of the kept aggregates and the
 * time: it never reads events, so it costs what a lookup costs.
 */

/** Half-life of evidence when TOLLWATCH_SCORE_HALF_LIFE_DAYS is unset. */
export const DEFAULT_HALF_LIFE_DAYS = 30;

export interface ScoringSettings {
  /** After this many days without a sighting, evidence weighs half as much. */
  halfLifeDays: number;
}

export const DEFAULT_SCORING: ScoringSettings = { halfLifeDays: DEFAULT_HALF_LIFE_DAYS };

/** What the aggregates of a called number say. */
export interface NumberEvidence {
  seenCount: number;
  /** Distinct source addresses that dialled it. */
  sourceIpCount: number;
  /** Distinct honeypot nodes that saw it (at most 32 per scope are kept). */
  nodeCount: number;
  /** Its INVITE events: attempts to place a call, not mere scans. */
  inviteCount: number;
  lastSeen: string;
}

/** What the aggregates of a source address say. */
export interface IpEvidence {
  seenCount: number;
  /** Distinct numbers it dialled. */
  calledNumberCount: number;
  nodeCount: number;
  lastSeen: string;
}

export interface Score {
  /** 0–100. */
  score: number;
  /** Short facts behind it, strongest evidence first. */
  reasons: string[];
}

/**
 * One kind of evidence: `weight` points at most, approached as `x / (x + half)`, so the first
 * sightings count most and no single kind can carry a score alone. `half` is where it gives
 * half its weight.
 */
interface Part {
  weight: number;
  half: number;
}

/** The parts of a number's evidence; their weights add up to 100 (docs/scoring.md). */
export const NUMBER_PARTS = {
  sources: { weight: 30, half: 3 },
  nodes: { weight: 25, half: 2 },
  invites: { weight: 25, half: 2 },
  events: { weight: 20, half: 10 },
} as const satisfies Record<string, Part>;

/** What the aggregates of a number range (a block of 100, src/domain/number-range.ts) say. */
export interface RangeEvidence {
  /** Distinct numbers of the range seen: fraudsters test several numbers of a block. */
  numberCount: number;
  sourceIpCount: number;
  nodeCount: number;
  inviteCount: number;
  lastSeen: string;
}

/**
 * The parts of a range's evidence; their weights add up to 100 (docs/scoring.md, "Ranges").
 * No part for volume: one scanner can dial one number of a block any number of times.
 */
export const RANGE_PARTS = {
  numbers: { weight: 35, half: 3 },
  sources: { weight: 25, half: 3 },
  nodes: { weight: 20, half: 2 },
  invites: { weight: 20, half: 3 },
} as const satisfies Record<string, Part>;

/** The parts of an address's evidence; their weights add up to 100 (docs/scoring.md). */
export const IP_PARTS = {
  numbers: { weight: 30, half: 5 },
  nodes: { weight: 30, half: 2 },
  events: { weight: 40, half: 20 },
} as const satisfies Record<string, Part>;

const DAY_MS = 86_400_000;

/** What evidence last seen `ageDays` ago still weighs: 1 when fresh, ½ after one half-life. */
export function decayWeight(ageDays: number, halfLifeDays: number): number {
  return 0.5 ** (Math.max(0, ageDays) / halfLifeDays);
}

function points({ weight, half }: Part, x: number): number {
  return x <= 0 ? 0 : (weight * x) / (x + half);
}

/** Points of fresh evidence (before decay), 0 to under 100. */
export function numberPoints(e: Omit<NumberEvidence, 'lastSeen'>): number {
  return points(NUMBER_PARTS.sources, e.sourceIpCount) + points(NUMBER_PARTS.nodes, e.nodeCount) + points(NUMBER_PARTS.invites, e.inviteCount) + points(NUMBER_PARTS.events, e.seenCount);
}

/** Points of fresh evidence (before decay), 0 to under 100. */
export function ipPoints(e: Omit<IpEvidence, 'lastSeen'>): number {
  return points(IP_PARTS.numbers, e.calledNumberCount) + points(IP_PARTS.nodes, e.nodeCount) + points(IP_PARTS.events, e.seenCount);
}

/** Points of a range's fresh evidence (before decay), 0 to under 100. */
export function rangePoints(e: Omit<RangeEvidence, 'lastSeen'>): number {
  return points(RANGE_PARTS.numbers, e.numberCount) + points(RANGE_PARTS.sources, e.sourceIpCount) + points(RANGE_PARTS.nodes, e.nodeCount) + points(RANGE_PARTS.invites, e.inviteCount);
}

/** A number range's score at `now`. */
export function rangeScore(e: RangeEvidence, now: Date, settings: ScoringSettings = DEFAULT_SCORING): Score {
  const reasons = [
    plural(e.numberCount, '# number of the range seen', '# distinct numbers of the range seen'),
    plural(e.sourceIpCount, 'called from # distinct source address', 'called from # distinct source addresses'),
    plural(e.nodeCount, 'seen by # honeypot node', 'seen by # honeypot nodes'),
    e.inviteCount > 0 ? plural(e.inviteCount, '# INVITE attempt, not only OPTIONS scans', '# INVITE attempts, not only OPTIONS scans') : 'scans only, no INVITE attempts',
  ];
  return decayed(rangePoints(e), e.lastSeen, now, settings, reasons);
}

/** A called number's score at `now`. */
export function numberScore(e: NumberEvidence, now: Date, settings: ScoringSettings = DEFAULT_SCORING): Score {
  const reasons = [
    plural(e.sourceIpCount, 'called from # distinct source address', 'called from # distinct source addresses'),
    plural(e.nodeCount, 'seen by # honeypot node', 'seen by # honeypot nodes'),
    e.inviteCount > 0 ? plural(e.inviteCount, '# INVITE attempt, not only OPTIONS scans', '# INVITE attempts, not only OPTIONS scans') : 'scans only, no INVITE attempts',
    plural(e.seenCount, 'seen # time', 'seen # times'),
  ];
  return decayed(numberPoints(e), e.lastSeen, now, settings, reasons);
}

/** A source address's score at `now`. */
export function ipScore(e: IpEvidence, now: Date, settings: ScoringSettings = DEFAULT_SCORING): Score {
  const reasons = [
    plural(e.calledNumberCount, 'dialled # distinct number', 'dialled # distinct numbers'),
    plural(e.nodeCount, 'seen by # honeypot node', 'seen by # honeypot nodes'),
    plural(e.seenCount, 'sent # probe', 'sent # probes'),
  ];
  return decayed(ipPoints(e), e.lastSeen, now, settings, reasons);
}

function decayed(fresh: number, lastSeen: string, now: Date, settings: ScoringSettings, reasons: string[]): Score {
  const ageDays = Math.max(0, (now.getTime() - Date.parse(lastSeen)) / DAY_MS);
  const weight = decayWeight(ageDays, settings.halfLifeDays);
  reasons.push(lastSeenReason(ageDays));
  // Said once it shows in whole percent.
  if (weight < 0.995) reasons.push(`evidence weighs ${Math.round(weight * 100)}% for its age (half-life ${settings.halfLifeDays} days)`);
  return { score: pointsToScore(fresh, weight), reasons };
}

/** The score fresh points make at a decay weight: whole, 0 to 100 (the feeds' indicator times work from it too). */
export function pointsToScore(fresh: number, weight: number): number {
  return Math.min(100, Math.max(0, Math.round(fresh * weight)));
}

function lastSeenReason(ageDays: number): string {
  const days = Math.floor(ageDays);
  if (days === 0) return 'last seen today';
  if (days < 730) return plural(days, 'last seen # day ago', 'last seen # days ago');
  return `last seen ${Math.floor(days / 365)} years ago`;
}

function plural(n: number, one: string, many: string): string {
  return (n === 1 ? one : many).replace('#', String(n));
}

/** The score of a number's kept aggregates (docs/api.md §7), held down by accepted reports when there are any. */
export function scoreOfNumber(seen: NumberAggregate, now: Date, settings: ScoringSettings, reported?: ReportedEvidence): Score {
  return heldDown(numberScore({ seenCount: seen.seenCount, sourceIpCount: seen.sourceIpCount, nodeCount: seen.nodeCount, inviteCount: seen.sipMethods.INVITE ?? 0, lastSeen: seen.lastSeen }, now, settings), reported);
}

/** The score of an address's kept aggregates (docs/api.md §7), held down by accepted reports when there are any. */
export function scoreOfAddress(seen: IpAggregate, now: Date, settings: ScoringSettings, reported?: ReportedEvidence): Score {
  return heldDown(ipScore({ seenCount: seen.seenCount, calledNumberCount: seen.calledNumberCount, nodeCount: seen.nodeCount, lastSeen: seen.lastSeen }, now, settings), reported);
}

/**
 * What the operator accepted of false-positive reports about a value (docs/api.md §17): evidence
 * of its own kind, passed in beside the aggregates so that a score stays a function of what it
 * is given. Absent (undefined) when no report of the value was accepted.
 */
export interface ReportedEvidence {
  /** Distinct accounts whose reports of the value the operator accepted: at least 1. */
  accounts: number;
}

/**
 * The most a value with an accepted false-positive report scores (docs/scoring.md, "Reports"):
 * under every threshold the service offers by default (feeds, TAXII and the DNS zones start at
 * 50, alerts at 20), while the answer still says what was seen.
 */
export const REPORTED_CEILING = 10;

/**
 * A score with accepted reports applied: capped at REPORTED_CEILING, with the fact as its last
 * reason. Never raises a score: min(score, ceiling).
 */
export function heldDown(score: Score, reported: ReportedEvidence | undefined): Score {
  if (!reported || reported.accounts < 1) return score;
  return {
    score: Math.min(score.score, REPORTED_CEILING),
    reasons: [...score.reasons, reportedReason(reported.accounts)],
  };
}

/** The reason an accepted report adds to an answer. */
export function reportedReason(accounts: number): string {
  return `${plural(accounts, 'reported as a false positive by # account', 'reported as a false positive by # accounts')}; accepted by the operator (score held at ${REPORTED_CEILING} or less)`;
}

/** The score of a number range's kept aggregates (docs/api.md §7, `range`). */
export function scoreOfRange(seen: RangeAggregate, now: Date, settings: ScoringSettings): Score {
  return rangeScore({ numberCount: seen.numberCount, sourceIpCount: seen.sourceIpCount, nodeCount: seen.nodeCount, inviteCount: seen.inviteCount, lastSeen: seen.lastSeen }, now, settings);
}

/** Points of a number's kept evidence before decay (for the feeds' indicator times). */
export function freshOfNumber(seen: NumberAggregate): number {
  return numberPoints({ seenCount: seen.seenCount, sourceIpCount: seen.sourceIpCount, nodeCount: seen.nodeCount, inviteCount: seen.sipMethods.INVITE ?? 0 });
}

/** Points of an address's kept evidence before decay. */
export function freshOfAddress(seen: IpAggregate): number {
  return ipPoints({ seenCount: seen.seenCount, calledNumberCount: seen.calledNumberCount, nodeCount: seen.nodeCount });
}

/**
 * A peer's say about a value (docs/scoring.md, "Peers"): the confidence it published and the
 * trust this server's operator gives it.
 */
export interface PeerSay {
  peer: string;
  /** 0–1. */
  trust: number;
  /** 0–100. */
  confidence: number;
}

/** What a peer's say is worth here: trust × confidence, 0 to 100. */
export function peerPoints({ trust, confidence }: PeerSay): number {
  return Math.min(1, Math.max(0, trust)) * Math.min(100, Math.max(0, confidence));
}

/**
 * A score with the peers' say added to this server's own evidence (docs/scoring.md, "Peers"):
 * each piece of evidence is taken as an independent chance that the value is used in toll fraud,
 * the local score's and each peer's trust × confidence, and the result is the chance that at
 * least one is right: 100 × (1 − (1 − local/100) × Π (1 − points/100)). So peers never lower a
 * score, a peer trusted 0 changes nothing, one peer alone can bring a value no further than its
 * trust × 100, and every peer adds at most its own points. `peerScore` is the peers' part alone.
 */
export function withPeers(local: Score, peers: readonly PeerSay[]): Score & { peerScore: number } {
  let doubt = 1 - local.score / 100;
  let peersDoubt = 1;
  const reasons: string[] = [];
  // Strongest first, so the reasons read in that order and the product is the same whatever order the peers came in.
  const ordered = [...peers].sort((a, b) => peerPoints(b) - peerPoints(a) || a.peer.localeCompare(b.peer) || b.confidence - a.confidence || b.trust - a.trust);
  for (const say of ordered) {
    const points = peerPoints(say);
    doubt *= 1 - points / 100;
    peersDoubt *= 1 - points / 100;
    reasons.push(`peer ${say.peer} says ${Math.round(say.confidence)} (trusted ${Math.round(say.trust * 100)}%): ${Math.round(points)} points`);
  }
  const score = Math.min(100, Math.max(local.score, Math.round(100 * (1 - doubt))));
  return { score, reasons: [...local.reasons, ...reasons], peerScore: Math.min(100, Math.round(100 * (1 - peersDoubt))) };
}

/** No evidence of this server's own: what a value only peers know starts from. */
export const NO_LOCAL_EVIDENCE: Score = { score: 0, reasons: ["not seen by this service's honeypots"] };

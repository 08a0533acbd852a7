/**
 * How many characters of a user agent an address's aggregate keeps. Probes carry up to 1,024
 * characters (attacker-chosen), more than PostgreSQL can index (2,704 bytes per key); the
 * first 256 name a client well enough, and the event itself keeps the whole value.
 */
export const USER_AGENT_KEPT_CHARACTERS = 256;

/** A user agent as address aggregates count it: its first USER_AGENT_KEPT_CHARACTERS characters. */
export function userAgentKey(userAgent: string): string {
  if (userAgent.length <= USER_AGENT_KEPT_CHARACTERS) return userAgent;
  // Characters, not UTF-16 units, as SQL's substr() counts them when aggregates are rebuilt.
  return Array.from(userAgent).slice(0, USER_AGENT_KEPT_CHARACTERS).join('');
}

/** Kept aggregates of one called number across the scopes a caller may read. */
export interface NumberAggregate {
  seenCount: number;
  firstSeen: string;
  lastSeen: string;
  sourceIpCount: number;
  sipMethods: Record<string, number>;
  /** Written forms seen (e.g. `0046…`, `+46…`), most seen first. */
  forms: string[];
  /** Distinct honeypot nodes that saw it (each scope keeps at most KEPT_NAMES). */
  nodeCount: number;
  /** The scope whose row alone this is, when the others read held none (src/aggregates/lookup-cache.ts, `refresh`). */
  soleScope?: string;
}

/** Kept aggregates of one source address across the scopes a caller may read. */
export interface IpAggregate {
  seenCount: number;
  firstSeen: string;
  lastSeen: string;
  calledNumberCount: number;
  userAgents: Array<{ user_agent: string; count: number }>;
  transports: Record<string, number>;
  /** Distinct honeypot nodes that saw it (each scope keeps at most KEPT_NAMES). */
  nodeCount: number;
  /** The scope whose row alone this is, when the others read held none (src/aggregates/lookup-cache.ts, `refresh`). */
  soleScope?: string;
}

/**
 * Kept aggregates of one number range (src/domain/number-range.ts) across the scopes a caller may
 * read: every distinct count exact across them.
 */
export interface RangeAggregate {
  seenCount: number;
  firstSeen: string;
  lastSeen: string;
  /** Distinct numbers of the range seen. */
  numberCount: number;
  sourceIpCount: number;
  nodeCount: number;
  inviteCount: number;
  /** The scope whose row alone this is, when the others read held none. */
  soleScope?: string;
}

/** A number whose key's hash begins with a range lookup's prefix (docs/api.md §13). */
export interface HashedNumber {
  /** SHA-256 of the number key, lower-case hex. */
  hash: string;
  /** The number key itself (its range's score is answered beside it). */
  key: string;
  aggregate: NumberAggregate;
}

/** Reads of the kept aggregates: a few index probes each, whatever the number of events. */
export interface LookupsRepository {
  phoneNumber(scopes: string[], numberKey: string): Promise<NumberAggregate | undefined>;
  ipAddress(scopes: string[], sourceIp: string, topUserAgents: number): Promise<IpAggregate | undefined>;
  /** Numbers whose key's hash begins with `prefix` (lower-case hex), at most `limit`, in hash order. */
  numbersByHashPrefix(scopes: string[], prefix: string, limit: number): Promise<HashedNumber[]>;
  /** The range of `prefix` (a rangeOfNumberKey answer) as `scopes` see it, or undefined when none of them holds it. */
  numberRange(scopes: string[], prefix: string): Promise<RangeAggregate | undefined>;
}

/** What a lookup reads by kind: a number's aggregate or an address's. */
export interface LookupValues {
  number: NumberAggregate;
  ip: IpAggregate;
  /** A number range, by its prefix. */
  range: RangeAggregate;
}

export type LookupKind = keyof LookupValues;

/** One key whose aggregates changed: a `number_key`, or a canonical source address. */
export interface LookupChange {
  kind: LookupKind;
  key: string;
}

/**
 * Aggregates kept in memory between lookups (src/aggregates/lookup-cache.ts, told of every fold
 * that changes a key). Declared here so lookups depend on what they ask of it, not on how it keeps.
 */
export interface AggregateMemo {
  /** The aggregate as `scopes` see it while fresh, without a promise; undefined when none is kept. */
  fresh<K extends LookupKind>(kind: K, key: string, scopes: readonly string[]): { value: LookupValues[K] | undefined } | undefined;
  /** The aggregate as `scopes` see it: from memory while fresh, else from `load`. */
  read<K extends LookupKind>(kind: K, key: string, scopes: readonly string[], load: () => Promise<LookupValues[K] | undefined>): Promise<LookupValues[K] | undefined>;
}

/** No memory: every lookup reads the store. */
export const NO_MEMO: AggregateMemo = {
  fresh: () => undefined,
  read: (_kind, _key, _scopes, load) => load(),
};

/**
 * Which keys the aggregates may hold (src/aggregates/known-keys.ts, a Bloom filter): a key ruled
 * out is "never seen" without a read. Never wrong about a key it rules out.
 */
export interface KeyFilter {
  mayExist(kind: LookupKind, key: string): boolean;
}

/** Every key the lookup aggregates hold, by kind, in any scope: what a filter is loaded from. */
export interface KeySource {
  /** How many (scope, key) rows there are of a kind, or more (an estimate no lower): what the filter is sized for. */
  count(kind: LookupKind): Promise<number>;
  /** Every key of a kind, a page at a time (a key kept in several scopes may come more than once). */
  keys(kind: LookupKind): AsyncIterable<readonly string[]>;
}

/** No filter: every key may exist. */
export const EVERY_KEY_MAY_EXIST: KeyFilter = { mayExist: () => true };

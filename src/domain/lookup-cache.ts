import type { IpAggregate, NumberAggregate } from './lookup-aggregates.ts';

/** What a lookup reads by kind: a number's aggregate or an address's. */
export interface LookupValues {
  number: NumberAggregate;
  ip: IpAggregate;
}

export type LookupKind = keyof LookupValues;

/** One key whose aggregates changed: a `number_key`, or a canonical source address. */
export interface LookupChange {
  kind: LookupKind;
  key: string;
}

/**
 * What the store side calls once aggregates have changed, so that lookups of this process
 * answer from the new rows at once instead of up to a cache lifetime later.
 */
export interface AggregateChanges {
  /** These keys changed, in any scope. */
  invalidate(changes: readonly LookupChange[]): void;
  /** Anything may have changed (a rebuild, an import). */
  clear(): void;
}

/** Tells nobody: for services without a cache, and for tests. */
export const NO_AGGREGATE_CHANGES: AggregateChanges = { invalidate() {}, clear() {} };

export interface LookupCacheOptions {
  /**
   * How long an entry is answered from memory, at most: the bound on how late a lookup sees a
   * change this process was not told of (one made by another process or instance). 0 disables.
   */
  ttlMs: number;
  /** Most entries kept; the key kept longest ago goes first. */
  maxEntries: number;
  now?: () => number;
}

interface Entry {
  /** The scopes it was read in. */
  scopeId: string;
  /** Undefined is an answer too: nothing seen (a negative entry). */
  value: NumberAggregate | IpAggregate | undefined;
  expiresAt: number;
}

/**
 * Aggregates recently read, per (kind, key, scopes read), so that repeated lookups of the same
 * number skip the store. Entries of one key, whatever the scopes, sit together, so that a change
 * to the key drops them all in one step.
 */
export class LookupCache implements AggregateChanges {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /**
   * By kind and key, oldest first: beyond maxEntries the oldest key goes, used or not. Its
   * entries would expire within the TTL anyway, and moving a key on every hit cost more (a
   * map deletion and insertion per lookup) than reading it again once in a while. Inside, one entry per set of scopes read (a
   * key is read by few: the shared data set alone, or with the caller's own; an array is lighter than a map).
   */
  private readonly keys = new Map<string, Entry[]>();
  private entries = 0;
  /**
   * Counts changes. A read that started before a change may have read the old rows: it is
   * answered, but not kept.
   */
  private generation = 0;

  constructor({ ttlMs, maxEntries, now = Date.now }: LookupCacheOptions) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  /** How many entries are kept. */
  get size(): number {
    return this.entries;
  }

  /**
   * The entry of `key` as `scopes` see it while it is fresh, without a promise: most lookups are
   * answered so. Undefined when none is kept or it is out of date (then `read`).
   */
  fresh<K extends LookupKind>(kind: K, key: string, scopes: readonly string[]): { value: LookupValues[K] | undefined } | undefined {
    if (this.ttlMs <= 0) return undefined;
    const scopeId = scopeIdOf(scopes);
    const hit = this.keys.get(`${kind}:${key}`)?.find((entry) => entry.scopeId === scopeId);
    return hit && hit.expiresAt > this.now() ? { value: hit.value as LookupValues[K] | undefined } : undefined;
  }

  /** The aggregate of `key` as `scopes` see it: from memory while fresh, else from `load`, kept. */
  async read<K extends LookupKind>(kind: K, key: string, scopes: readonly string[], load: () => Promise<LookupValues[K] | undefined>): Promise<LookupValues[K] | undefined> {
    if (this.ttlMs <= 0) return load();
    const kept = this.fresh(kind, key, scopes);
    if (kept) return kept.value;
    const now = this.now();
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) this.keep(`${kind}:${key}`, { scopeId: scopeIdOf(scopes), value, expiresAt: now + this.ttlMs }, now);
    return value;
  }

  invalidate(changes: readonly LookupChange[]): void {
    this.generation++;
    for (const { kind, key } of changes) this.drop(`${kind}:${key}`);
  }

  clear(): void {
    this.generation++;
    this.keys.clear();
    this.entries = 0;
  }

  private keep(id: string, entry: Entry, now: number): void {
    this.dropExpired(now);
    let byScope = this.keys.get(id);
    if (!byScope) this.keys.set(id, (byScope = []));
    const at = byScope.findIndex((e) => e.scopeId === entry.scopeId);
    if (at < 0) {
      byScope.push(entry);
      this.entries++;
    } else byScope[at] = entry;
    while (this.entries > this.maxEntries) this.drop(this.keys.keys().next().value!);
  }

  /**
   * Drops the oldest keys while every entry they hold has expired. Keys are kept in the order
   * they were first read, so expired ones gather at the front: the cache then holds about what
   * a TTL of lookups asked, not maxEntries of answers long out of date (for a stream of numbers
   * never seen, that was 100,000 entries kept only to be evicted, each surviving into V8's old
   * generation first).
   */
  private dropExpired(now: number): void {
    for (const [id, byScope] of this.keys) {
      if (byScope.some((entry) => entry.expiresAt > now)) return;
      this.keys.delete(id);
      this.entries -= byScope.length;
    }
  }

  private drop(id: string): void {
    const byScope = this.keys.get(id);
    if (!byScope) return;
    this.entries -= byScope.length;
    this.keys.delete(id);
  }
}

/** The scopes a read was made in, as one key: most reads are of one scope, kept as it is. */
function scopeIdOf(scopes: readonly string[]): string {
  return scopes.length === 1 ? scopes[0]! : scopes.join(' ');
}

import type { AggregateMemo, IpAggregate, LookupChange, LookupKind, LookupValues, NumberAggregate, RangeAggregate } from '../domain/lookups/lookup-aggregates.ts';

export interface LookupCacheOptions {
  /**
   * How long an aggregate is answered from memory, at most: the bound on how late a lookup sees
   * a change nobody told this cache of (`invalidate`, `clear`). 0 disables the cache.
   */
  ttlMs: number;
  /**
   * How long "never seen" is kept, at most (`ttlMs` if shorter). Apart because lookups of
   * numbers never seen come as an endless stream of new ones (every legitimate call a PBX
   * checks): kept as long as the aggregates found, each would live on in V8's old generation
   * only to be evicted at `maxEntries`, and few would be asked again meanwhile.
   */
  missingTtlMs?: number;
  /** Most entries kept of each kind, found and never seen; the key kept longest ago goes first. */
  maxEntries: number;
  now?: () => number;
}

interface Entry {
  kind: LookupKind;
  /** The scopes it was read in (its own copy). */
  scopes: readonly string[];
  /** Undefined is an answer too: nothing seen (a negative entry). */
  value: NumberAggregate | IpAggregate | RangeAggregate | undefined;
  expiresAt: number;
}

/**
 * Entries of one lifetime, by key, oldest first: beyond maxEntries the oldest key goes, used or
 * not. Its entries would expire within the lifetime anyway, and moving a key on every hit cost
 * more (a map deletion and insertion per lookup) than reading it again once in a while. Inside,
 * one entry per kind and set of scopes read (a key is read by few: the shared data set alone, or
 * with the caller's own; an array is lighter than a map). Keyed by the key alone, with the kind in
 * the entry, so that a hit builds no string: a `kind:key` name made per lookup cost the map a
 * fresh string to hash, twice per number lookup (its range too).
 */
class Shelf {
  readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly keys = new Map<string, Entry[]>();
  size = 0;

  constructor(ttlMs: number, maxEntries: number) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }

  /** The entries of `key` of one kind, one per set of scopes read. */
  entriesOf(kind: LookupKind, key: string): Entry[] {
    return (this.keys.get(key) ?? []).filter((entry) => entry.kind === kind);
  }

  find(kind: LookupKind, key: string, scopes: readonly string[]): Entry | undefined {
    const entries = this.keys.get(key);
    if (entries === undefined) return undefined;
    for (const entry of entries) if (entry.kind === kind && sameScopes(entry.scopes, scopes)) return entry;
    return undefined;
  }

  keep(key: string, entry: Entry, now: number): void {
    this.dropExpired(now);
    let entries = this.keys.get(key);
    if (!entries) this.keys.set(key, (entries = []));
    const at = entries.findIndex((e) => e.kind === entry.kind && sameScopes(e.scopes, entry.scopes));
    if (at < 0) {
      entries.push(entry);
      this.size++;
    } else entries[at] = entry;
    while (this.size > this.maxEntries) this.dropKey(this.keys.keys().next().value!);
  }

  /** Drops the entry of one kind and set of scopes, read again with the other kind of answer. */
  dropEntry(kind: LookupKind, key: string, scopes: readonly string[]): void {
    const entries = this.keys.get(key);
    const at = entries?.findIndex((e) => e.kind === kind && sameScopes(e.scopes, scopes)) ?? -1;
    if (at < 0) return;
    entries!.splice(at, 1);
    this.size--;
    if (entries!.length === 0) this.keys.delete(key);
  }

  /** Drops every entry of `key` of one kind. */
  drop(kind: LookupKind, key: string): void {
    const entries = this.keys.get(key);
    if (!entries) return;
    const kept = entries.filter((entry) => entry.kind !== kind);
    this.size -= entries.length - kept.length;
    if (kept.length === 0) this.keys.delete(key);
    else this.keys.set(key, kept);
  }

  private dropKey(key: string): void {
    this.size -= this.keys.get(key)?.length ?? 0;
    this.keys.delete(key);
  }

  clear(): void {
    this.keys.clear();
    this.size = 0;
  }

  /**
   * Drops the oldest keys while every entry they hold has expired. Keys are kept in the order
   * they were first read, and every entry of a shelf lives as long, so expired ones gather at
   * the front: the shelf then holds about what a lifetime of lookups asked, not maxEntries of
   * answers long out of date (for a stream of numbers never seen, 100,000 entries kept only to
   * be evicted, each surviving into V8's old generation first).
   */
  private dropExpired(now: number): void {
    for (const [key, entries] of this.keys) {
      if (entries.some((entry) => entry.expiresAt > now)) return;
      this.keys.delete(key);
      this.size -= entries.length;
    }
  }
}

/** Whether two reads were made in the same scopes, in the same order (readScopesOf's). */
function sameScopes(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Aggregates recently read, per (kind, key, scopes read), so that repeated lookups of the same
 * number skip the store. Entries of one key, whatever the scopes, sit together, so that a change
 * to the key drops them all in one step. Found aggregates and "never seen" live on shelves of
 * their own lifetimes.
 */
export class LookupCache implements AggregateMemo {
  private readonly now: () => number;
  private readonly found: Shelf;
  private readonly missing: Shelf;
  /**
   * Counts changes. A read that started before a change may have read the old rows: it is
   * answered, but not kept.
   */
  private generation = 0;

  constructor({ ttlMs, missingTtlMs = ttlMs, maxEntries, now = Date.now }: LookupCacheOptions) {
    this.now = now;
    this.found = new Shelf(ttlMs, maxEntries);
    this.missing = new Shelf(Math.min(ttlMs, missingTtlMs), maxEntries);
  }

  /** How many entries are kept. */
  get size(): number {
    return this.found.size + this.missing.size;
  }

  /**
   * The entry of `key` as `scopes` see it while it is fresh, without a promise: most lookups are
   * answered so. Undefined when none is kept or it is out of date (then `read`).
   */
  fresh<K extends LookupKind>(kind: K, key: string, scopes: readonly string[]): { value: LookupValues[K] | undefined } | undefined {
    if (this.found.ttlMs <= 0) return undefined;
    const hit = this.found.find(kind, key, scopes) ?? this.missing.find(kind, key, scopes);
    return hit && hit.expiresAt > this.now() ? { value: hit.value as LookupValues[K] | undefined } : undefined;
  }

  /** The aggregate of `key` as `scopes` see it: from memory while fresh, else from `load`, kept. */
  async read<K extends LookupKind>(kind: K, key: string, scopes: readonly string[], load: () => Promise<LookupValues[K] | undefined>): Promise<LookupValues[K] | undefined> {
    if (this.found.ttlMs <= 0) return load();
    const kept = this.fresh(kind, key, scopes);
    if (kept) return kept.value;
    const now = this.now();
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) {
      const [shelf, other] = value === undefined ? [this.missing, this.found] : [this.found, this.missing];
      other.dropEntry(kind, key, scopes);
      shelf.keep(key, { kind, scopes: [...scopes], value, expiresAt: now + shelf.ttlMs }, now);
    }
    return value;
  }

  invalidate(changes: readonly LookupChange[]): void {
    this.generation++;
    for (const { kind, key } of changes) {
      this.found.drop(kind, key);
      this.missing.drop(kind, key);
    }
  }

  /**
   * Like invalidate, but told what a fold step of this process wrote (`written`): an entry whose
   * new value that alone gives takes it instead of going, and one the step did not touch stays.
   * A key that intake keeps changing (a number under attack, asked about by every PBX) is then
   * not read from the store again after each step. An entry is worked out again when the step
   * wrote the key in exactly one of its scopes and the others held no row of it (one scope read,
   * or a value from that scope's row alone, or "never seen"); otherwise it goes, as invalidate
   * drops it: a union of several scopes' rows has distinct counts no single row holds. Nothing is
   * kept that nobody asked for.
   */
  refresh(changes: readonly LookupChange[], written: FoldedValues): void {
    this.generation++;
    const at = this.now();
    for (const { kind, key } of changes) {
      const writtenIn = written.scopes(kind, key);
      for (const entry of [...this.found.entriesOf(kind, key), ...this.missing.entriesOf(kind, key)]) {
        const { scopes } = entry;
        const touched = scopes.filter((scope) => writtenIn.includes(scope));
        if (touched.length === 0) continue;
        const shelf = entry.value === undefined ? this.missing : this.found;
        shelf.dropEntry(kind, key, scopes);
        const [scope] = touched as [string];
        if (touched.length === 1 && (scopes.length === 1 || entry.value === undefined || entry.value.soleScope === scope)) {
          this.found.keep(key, { kind, scopes, value: written.value(kind, key, scope), expiresAt: at + this.found.ttlMs }, at);
        }
      }
    }
  }

  clear(): void {
    this.generation++;
    this.found.clear();
    this.missing.clear();
  }
}

/** What a fold step of this process wrote: per key, the scopes it wrote a row in and their values. */
export interface FoldedValues {
  scopes(kind: LookupKind, key: string): readonly string[];
  /** What `key` holds in `scope` alone, one of `scopes(kind, key)`. */
  value(kind: LookupKind, key: string, scope: string): NumberAggregate | IpAggregate;
}

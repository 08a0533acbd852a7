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
  /** The scopes it was read in. */
  scopeId: string;
  /** Undefined is an answer too: nothing seen (a negative entry). */
  value: NumberAggregate | IpAggregate | RangeAggregate | undefined;
  expiresAt: number;
}

/**
 * Entries of one lifetime, by kind and key, oldest first: beyond maxEntries the oldest key goes,
 * used or not. Its entries would expire within the lifetime anyway, and moving a key on every
 * hit cost more (a map deletion and insertion per lookup) than reading it again once in a
 * while. Inside, one entry per set of scopes read (a key is read by few: the shared data set
 * alone, or with the caller's own; an array is lighter than a map).
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

  /** The entries of `id`, one per set of scopes read. */
  entriesOf(id: string): readonly Entry[] {
    return this.keys.get(id) ?? [];
  }

  find(id: string, scopeId: string): Entry | undefined {
    return this.keys.get(id)?.find((entry) => entry.scopeId === scopeId);
  }

  keep(id: string, entry: Entry, now: number): void {
    this.dropExpired(now);
    let byScope = this.keys.get(id);
    if (!byScope) this.keys.set(id, (byScope = []));
    const at = byScope.findIndex((e) => e.scopeId === entry.scopeId);
    if (at < 0) {
      byScope.push(entry);
      this.size++;
    } else byScope[at] = entry;
    while (this.size > this.maxEntries) this.drop(this.keys.keys().next().value!);
  }

  /** Drops the entry of one set of scopes, read again with the other kind of answer. */
  dropEntry(id: string, scopeId: string): void {
    const byScope = this.keys.get(id);
    const at = byScope?.findIndex((e) => e.scopeId === scopeId) ?? -1;
    if (at < 0) return;
    byScope!.splice(at, 1);
    this.size--;
    if (byScope!.length === 0) this.keys.delete(id);
  }

  drop(id: string): void {
    const byScope = this.keys.get(id);
    if (!byScope) return;
    this.size -= byScope.length;
    this.keys.delete(id);
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
    for (const [id, byScope] of this.keys) {
      if (byScope.some((entry) => entry.expiresAt > now)) return;
      this.keys.delete(id);
      this.size -= byScope.length;
    }
  }
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
    const id = `${kind}:${key}`;
    const scopeId = scopeIdOf(scopes);
    const hit = this.found.find(id, scopeId) ?? this.missing.find(id, scopeId);
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
      const id = `${kind}:${key}`;
      const scopeId = scopeIdOf(scopes);
      const [shelf, other] = value === undefined ? [this.missing, this.found] : [this.found, this.missing];
      other.dropEntry(id, scopeId);
      shelf.keep(id, { scopeId, value, expiresAt: now + shelf.ttlMs }, now);
    }
    return value;
  }

  invalidate(changes: readonly LookupChange[]): void {
    this.generation++;
    for (const { kind, key } of changes) {
      this.found.drop(`${kind}:${key}`);
      this.missing.drop(`${kind}:${key}`);
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
      const id = `${kind}:${key}`;
      const writtenIn = written.scopes(kind, key);
      for (const entry of [...this.found.entriesOf(id), ...this.missing.entriesOf(id)]) {
        const scopes = entry.scopeId.split(SCOPE_SEPARATOR);
        const touched = scopes.filter((scope) => writtenIn.includes(scope));
        if (touched.length === 0) continue;
        const shelf = entry.value === undefined ? this.missing : this.found;
        shelf.dropEntry(id, entry.scopeId);
        const [scope] = touched as [string];
        if (touched.length === 1 && (scopes.length === 1 || entry.value === undefined || entry.value.soleScope === scope)) {
          this.found.keep(id, { scopeId: entry.scopeId, value: written.value(kind, key, scope), expiresAt: at + this.found.ttlMs }, at);
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

/** Between the scopes of a read in several (scopes are `shared` and account ids: no spaces). */
const SCOPE_SEPARATOR = ' ';

/** The scopes a read was made in, as one key: most reads are of one scope, kept as it is. */
function scopeIdOf(scopes: readonly string[]): string {
  return scopes.length === 1 ? scopes[0]! : scopes.join(SCOPE_SEPARATOR);
}

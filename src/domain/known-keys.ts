import { BloomFilter } from 'bloomfilter';
import type { LookupChange, LookupKind } from './lookup-cache.ts';

/** Every key the lookup aggregates hold, by kind, in any scope: what a filter is loaded from. */
export interface KeySource {
  /** How many (scope, key) rows there are of a kind: what the filter is sized for. */
  count(kind: LookupKind): Promise<number>;
  /** Every key of a kind (a key kept in several scopes may come more than once). */
  keys(kind: LookupKind): AsyncIterable<string>;
}

/** False positives the filter is sized for: one lookup in a hundred never seen still reads the store. */
const FALSE_POSITIVES = 0.01;
/** Keys a filter has room for beyond those loaded, as a factor, before it is loaded again larger. */
const ROOM = 2;
/** The least a filter is sized for (120 KB at 1%), so that a young store is not reloaded often. */
const LEAST_KEYS = 100_000;
/** How soon a load that failed (store away) is tried again. */
const RETRY_MS = 5000;

class Filter {
  private readonly bloom: BloomFilter;
  private readonly capacity: number;
  private added = 0;

  constructor(keys: number) {
    this.capacity = Math.max(LEAST_KEYS, keys * ROOM);
    this.bloom = BloomFilter.withTargetError(this.capacity, FALSE_POSITIVES);
  }

  add(key: string): void {
    this.bloom.add(key);
    this.added++;
  }

  test(key: string): boolean {
    return this.bloom.test(key);
  }

  /** Whether it holds more keys than it was sized for (its false positives grow past FALSE_POSITIVES). */
  get full(): boolean {
    return this.added > this.capacity;
  }
}

/**
 * Which numbers and addresses the lookup aggregates may hold, in any scope: a Bloom filter per
 * kind (no false negatives; about 1% false positives), so that a lookup of a number never seen
 * (most numbers a PBX checks before routing a call) is answered without reading the store.
 *
 * Loaded from the store, then told of every key a fold adds, here or elsewhere (the same notices
 * that drop keys from the lookup cache: src/store/aggregate-folder.ts). A key folded in is
 * therefore known no later than a cached answer of it would be dropped, within the bound of
 * docs/api.md §7. Keys are never removed: a retention run or a rebuild leaves keys that are gone,
 * until the filter is loaded again, which a rebuild's notice does. Until the first load has
 * finished, and while a load fails, every key may exist: lookups read the store, as without it.
 */
export class KnownKeys {
  private readonly source: KeySource;
  private readonly onError: (err: unknown) => void;
  private filters: Partial<Record<LookupKind, Filter>> = {};
  /** Filters being loaded: they are told of keys folded meanwhile too. */
  private building: Partial<Record<LookupKind, Filter>> | undefined;
  private loading = false;
  /** A load was asked for while one ran: what it read may predate the reason. */
  private again = false;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(source: KeySource, onError: (err: unknown) => void = () => {}) {
    this.source = source;
    this.onError = onError;
  }

  /** False only when no aggregate holds `key`; true when one may. */
  mayExist(kind: LookupKind, key: string): boolean {
    const filter = this.filters[kind];
    return filter === undefined || filter.test(key);
  }

  /** Keys a fold added to the aggregates. */
  add(changes: readonly LookupChange[]): void {
    for (const { kind, key } of changes) {
      this.filters[kind]?.add(key);
      this.building?.[kind]?.add(key);
    }
    // Still right, but past its size its false positives grow: loaded again, larger.
    if (this.filters.number?.full || this.filters.ip?.full) this.reload();
  }

  /**
   * Forgets what it knew and loads the filters again from the store: at start, and when
   * anything may have changed (a rebuild may add keys no fold announced). Every key may exist
   * until the load has finished.
   */
  reload(): void {
    if (this.stopped) return;
    this.filters = {};
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    void this.load().finally(() => {
      this.loading = false;
      if (this.again && !this.stopped) {
        this.again = false;
        this.reload();
      }
    });
  }

  /** Stops loading (the service is closing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private async load(): Promise<void> {
    try {
      const [numbers, addresses] = await Promise.all([this.source.count('number'), this.source.count('ip')]);
      const building = { number: new Filter(numbers), ip: new Filter(addresses) };
      this.building = building;
      for (const kind of ['number', 'ip'] as const) {
        for await (const key of this.source.keys(kind)) {
          if (this.stopped) return;
          building[kind].add(key);
        }
      }
      // Not when a reload was asked for meanwhile: what this load read may predate its reason.
      if (!this.again) this.filters = building;
    } catch (err) {
      if (this.stopped) return;
      this.onError(err);
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.reload(), RETRY_MS).unref();
    } finally {
      this.building = undefined;
    }
  }
}

import { setImmediate as nextTurn } from 'node:timers/promises';
import { BloomFilter } from 'bloomfilter';
import type { KeyFilter, KeySource, LookupChange, LookupKind } from '../domain/lookups/lookup-aggregates.ts';

/** False positives the filter is sized for: one lookup in a hundred never seen still reads the store. */
const FALSE_POSITIVES = 0.01;
/** Keys a filter has room for beyond those loaded, as a factor, before it is loaded again larger. */
const ROOM = 2;
/** The least a filter is sized for (120 KB at 1%), so that a young store is not reloaded often. */
const LEAST_KEYS = 100_000;
/** Every kind of key a filter is kept of: numbers, addresses and number ranges. */
const KINDS: readonly LookupKind[] = ['number', 'ip', 'range'];

/** How soon after a load failed (store away) another may start. */
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
 * Which numbers, addresses and number ranges the lookup aggregates may hold, in any scope: a Bloom filter per
 * kind (no false negatives; about 1% false positives), so that a lookup of a number never seen
 * (most numbers a PBX checks before routing a call) is answered without reading the store.
 *
 * Loaded from the store when first asked, then told of every key a fold adds, here or elsewhere
 * (the same notices that drop keys from the lookup cache: src/aggregates/folder.ts). A key
 * folded in is therefore known no later than a cached answer of it would be dropped, within the
 * bound of docs/api.md §7. Keys are never removed: a retention run or a rebuild leaves keys that
 * are gone, until the filter is loaded again, which a rebuild's notice asks for. Until a load has
 * finished, and while loads fail, every key may exist: lookups read the store, as without it.
 * Loaded only once asked, so a process that looks nothing up (the CLI) never reads the keys.
 */
export class KnownKeys implements KeyFilter {
  private readonly source: KeySource;
  private readonly onError: (err: unknown) => void;
  private readonly now: () => number;
  private filters: Partial<Record<LookupKind, Filter>> = {};
  private loading = false;
  /** Keys folds added while a load ran, which it may not have read (a replica behind): added to it at its end. */
  private heard: LookupChange[] = [];
  /** The filters must be loaded (again) before they rule anything out; set by `reload`. */
  private stale = true;
  /** After a failed load, no other before this time. */
  private retryAt = 0;
  private stopped = false;

  constructor(source: KeySource, onError: (err: unknown) => void = () => {}, now: () => number = Date.now) {
    this.source = source;
    this.onError = onError;
    this.now = now;
  }

  /** False only when no aggregate holds `key`; true when one may. The first call starts the load. */
  mayExist(kind: LookupKind, key: string): boolean {
    const filter = this.filters[kind];
    if (filter) return filter.test(key);
    if (this.stale && !this.loading && !this.stopped && this.now() >= this.retryAt) void this.load();
    return true;
  }

  /** Keys a fold added to the aggregates. */
  add(changes: readonly LookupChange[]): void {
    for (const change of changes) this.filters[change.kind]?.add(change.key);
    if (this.loading) this.heard.push(...changes);
    // Still right, but past its size its false positives grow: loaded again, larger.
    if (KINDS.some((kind) => this.filters[kind]?.full)) this.reload();
  }

  /**
   * Forgets what it knew, to be loaded again when next asked: when anything may have changed (a
   * rebuild may add keys no fold announced). A load running meanwhile is not used: what it read
   * may predate the reason.
   */
  reload(): void {
    this.filters = {};
    this.stale = true;
  }

  /** Loads nothing more (the service is closing). */
  stop(): void {
    this.stopped = true;
  }

  private async load(): Promise<void> {
    this.stale = false;
    this.loading = true;
    try {
      const [numbers, addresses, ranges] = await Promise.all(KINDS.map((kind) => this.source.count(kind)));
      const building: Record<LookupKind, Filter> = { number: new Filter(numbers!), ip: new Filter(addresses!), range: new Filter(ranges!) };
      for (const kind of KINDS) {
        for await (const page of this.source.keys(kind)) {
          if (this.stopped) return;
          for (const key of page) building[kind].add(key);
          // A turn of the event loop between pages. Each page's read and adds end in resolved
          // promises, so without it the whole load ran as one task: on a store of 5 million
          // numbers and 7 million addresses that held every request for 20 s after the first
          // lookup (docs/performance.md, "A store of 10 million events").
          await nextTurn();
        }
      }
      for (const { kind, key } of this.heard) building[kind].add(key);
      if (!this.stale) this.filters = building;
    } catch (err) {
      if (this.stopped) return;
      this.stale = true;
      this.retryAt = this.now() + RETRY_MS;
      this.onError(err);
    } finally {
      this.heard = [];
      this.loading = false;
    }
  }
}

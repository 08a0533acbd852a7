import { AggregateFolder, DEFAULT_FOLDER_SETTINGS, FOLDED_ELSEWHERE_READ } from '../aggregates/folder.ts';
import { KnownKeys } from '../aggregates/known-keys.ts';
import { LookupCache, type FoldedValues } from '../aggregates/lookup-cache.ts';
import { foldStep, keysFoldedBetween, type FoldedRows } from '../store/fold/aggregate-fold.ts';
import { aggregateOfRow } from '../store/repositories/lookups-repository.ts';
import type { AggregateRow } from '../store/fold/ingest-writes.ts';
import type { LookupChange, LookupKind } from '../domain/lookups/lookup-aggregates.ts';
import { rangeOfNumberKey } from '../domain/number-range.ts';
import { TOP_USER_AGENTS } from '../domain/lookups/lookup-service.ts';
import { SqlAggregateKeys } from '../store/fold/aggregate-keys.ts';
import { FoldRowCache } from '../store/fold/fold-row-cache.ts';
import { rebuildAggregates } from '../store/fold/aggregates-rebuild.ts';
import { ReplicaReads } from '../domain/lookups/replica-reads.ts';
import { PostgresReplicaProgress } from '../store/repositories/replica-progress.ts';
import type { AggregateChangeNotice } from '../aggregates/folder.ts';
import type { Foundation } from './foundation.ts';

/** Most lookup answers kept in memory of each kind: (key, scopes) pairs, a few hundred bytes each. */
const LOOKUP_CACHE_ENTRIES = 100_000;
/**
 * How long "never seen" is answered from memory (at most TOLLWATCH_LOOKUP_CACHE_MS): numbers
 * never seen mostly come once each, and kept longer they would fill the cache (lookup-cache.ts).
 */
const LOOKUP_CACHE_MISSING_MS = 1000;

/**
 * The lookup aggregates' pipeline (docs/architecture.md, "The write path" and "The read path"):
 * the folder that folds stored events into them behind intake, and what lookups keep in memory
 * of them, told of every change the folder makes or sees.
 */
export interface AggregatePipeline {
  /**
   * Folds stored events into the lookup aggregates behind intake. The server starts its turns;
   * `settle()` folds everything stored so far (the CLI after an import).
   */
  aggregateFolder: AggregateFolder;
  /** Recent aggregates, per key and scopes, dropped by every fold that changes the key. */
  lookupCache: LookupCache;
  /** Which keys the aggregates may hold: lookups of keys they cannot skip the store. */
  knownKeys: KnownKeys;
  /** With a PostgreSQL read replica: who reads the primary meanwhile, and the second forgetting (domain/lookups/replica-reads.ts). */
  replicaReads: ReplicaReads<AggregateChangeNotice> | undefined;
  /** Recomputes every lookup aggregate from the stored events (after bulk loads or trust changes). */
  rebuildAggregates(): Promise<void>;
  stop(): Promise<void>;
}

/** What a fold step of this process wrote, from its rows; values worked out only for kept entries. */
function valuesOfRows(rows: FoldedRows): FoldedValues {
  const byKey = new Map<string, Map<string, AggregateRow>>();
  const add = (kind: LookupKind, row: AggregateRow) => {
    const id = `${kind}:${row.key}`;
    let scopes = byKey.get(id);
    if (!scopes) byKey.set(id, (scopes = new Map()));
    scopes.set(row.scope, row);
  };
  for (const row of rows.numbers) add('number', row);
  for (const row of rows.addresses) add('ip', row);
  return {
    scopes: (kind, key) => [...(byKey.get(`${kind}:${key}`)?.keys() ?? [])],
    value: (kind, key, scope) => aggregateOfRow(kind, byKey.get(`${kind}:${key}`)!.get(scope)!, TOP_USER_AGENTS),
  };
}

export function assembleAggregates(base: Foundation): AggregatePipeline {
  const { database, writer, log, config } = base;
  // Folded by the writer thread where there is one. It also reads what other processes folded
  // (instances, workers, the CLI), so caches drop those keys too.
  const foldRows = new FoldRowCache();
  const aggregateFolder = new AggregateFolder(
    writer ? (chunk) => writer.foldStep(chunk) : (chunk) => foldStep(database, chunk, foldRows),
    DEFAULT_FOLDER_SETTINGS,
    log,
    (after, upTo) => keysFoldedBetween(database.db, after, upTo, FOLDED_ELSEWHERE_READ),
  );
  const lookupCache = new LookupCache({ ttlMs: config.lookupCacheMs, missingTtlMs: LOOKUP_CACHE_MISSING_MS, maxEntries: LOOKUP_CACHE_ENTRIES });
  // Loaded from what lookups read at the first lookup, and told of every fold like the cache.
  const knownKeys = new KnownKeys(new SqlAggregateKeys(base.reads.db, base.reads.caps), (err) => log?.warn({ err }, 'loading the known lookup keys failed; lookups read the store meanwhile'));
  const changedKeys = (changes: Exclude<AggregateChangeNotice, 'everything'>): LookupChange[] => [
    ...changes.numbers.map((key) => ({ kind: 'number' as const, key })),
    ...changes.addresses.map((key) => ({ kind: 'ip' as const, key })),
  ];
  // A range changes exactly when one of its numbers does: the ranges of a change's numbers are
  // what it changed of them, so every notice that names numbers (here, elsewhere, own writes)
  // names their ranges with the same bound of docs/api.md §7.
  const changedRanges = (changes: Exclude<AggregateChangeNotice, 'everything'>): LookupChange[] => {
    const ranges = new Set<string>();
    for (const key of changes.numbers) {
      const range = rangeOfNumberKey(key);
      if (range !== null) ranges.add(range);
    }
    return [...ranges].map((key) => ({ kind: 'range' as const, key }));
  };
  // A replica replays the fold a little later: what lookups read there meanwhile is forgotten
  // again once it has, and the accounts whose own events were counted read the primary till then.
  const replicaReads =
    base.reads !== database && base.reads.caps.walReplicas && database.caps.walReplicas
      ? new ReplicaReads<AggregateChangeNotice>(
          new PostgresReplicaProgress(database.db, base.reads.db),
          (changes) => (changes === 'everything' ? lookupCache.clear() : lookupCache.invalidate([...changedKeys(changes), ...changedRanges(changes)])),
          (err) => log?.warn({ err }, 'reading the primary’s WAL position failed; lookups may read the replica before it has replayed a fold'),
        )
      : undefined;
  aggregateFolder.onChanges((changes) => {
    replicaReads?.changed(changes);
    if (changes === 'everything') {
      lookupCache.clear();
      return knownKeys.reload();
    }
    const changed = changedKeys(changes);
    const ranges = changedRanges(changes);
    knownKeys.add([...changed, ...ranges]);
    // Not with a replica: answers there are what the replica holds, and one worked out from the
    // primary's rows could be followed by an older one read from the replica before it replays.
    if (changes.rows && !replicaReads) lookupCache.refresh(changed, valuesOfRows(changes.rows));
    else lookupCache.invalidate(changed);
    // A range's row is added to in SQL, not passed on: its kept answers are dropped, read again when asked.
    if (ranges.length > 0) lookupCache.invalidate(ranges);
  });
  if (replicaReads) aggregateFolder.onCounted((accountIds) => replicaReads.counted(accountIds));
  return {
    aggregateFolder,
    lookupCache,
    knownKeys,
    replicaReads,
    async rebuildAggregates() {
      await rebuildAggregates(database.unhurried, database.caps);
      lookupCache.clear();
      knownKeys.reload();
    },
    async stop() {
      await aggregateFolder.stop();
      knownKeys.stop();
      replicaReads?.close();
    },
  };
}

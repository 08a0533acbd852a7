import { sql, type Kysely, type Transaction } from 'kysely';
import { isAbsentValue } from '../../domain/events/event-fields.ts';
import { addCount, countsJson, countsOf } from '../../domain/lookups/kept-counts.ts';
import { userAgentKey } from '../../domain/lookups/lookup-aggregates.ts';
import { numberHash } from '../../domain/lookups/number-hash.ts';
import { rangeOfNumberKey } from '../../domain/number-range.ts';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { keepsPairsByAddress } from './distinct-sets.ts';
import { enqueueFirstSeen } from '../repositories/first-seen-alerts.ts';
import type { FoldRowCache, FoldRowWrites } from './fold-row-cache.ts';
import { holdAdvisoryLock, tryAdvisoryLock } from '../advisory-locks.ts';
import type { AggregateRow, AggregateTable, IngestWrites, RangeAddition, SetTable } from './ingest-writes.ts';
import type { Schema } from '../schema.ts';

/** The `fold_state` row holding how far the lookup aggregates have folded the events in. */
export const AGGREGATES_FOLD = 'aggregates';
/**
 * The `fold_state` row counting rebuilds of the lookup aggregates (absent: none yet). A rebuild
 * changes any key without moving the fold's position, so instances that see this count move
 * forget every aggregate they keep in memory (src/aggregates/folder.ts).
 */
export const AGGREGATES_REBUILDS = 'aggregates-rebuilt';

/** Keys whose aggregates a fold changed, in every scope: what caches of lookups must drop. */
export interface FoldedKeys {
  numbers: string[];
  addresses: string[];
  /**
   * The rows this process's own step wrote, as the store holds them once it committed: when
   * there are at most FOLDED_ROWS_TOLD, so that lookups here keep their kept answers of those
   * keys current instead of reading them again (src/assembly/aggregates.ts). Absent for keys
   * another process folded, and for larger steps (an import, a backlog), whose rows would cost
   * more to pass between threads than the lookups that read them again.
   */
  rows?: FoldedRows;
}

/** Aggregate rows a fold step wrote, per table. */
export interface FoldedRows {
  numbers: AggregateRow[];
  addresses: AggregateRow[];
}

/**
 * Most rows a step passes on with its keys. A step of a busy hour's intake (2,000 events a
 * second, 200 ms a step) writes up to about 1,000; a step of a backlog, up to 40,000. Passing
 * rows between threads costs about 3.6 µs a row, sent and received (4,000 took 14 ms here), so
 * a step at this bound holds the main thread a few milliseconds, against 50–130 µs for each
 * lookup that would otherwise read its key again.
 */
export const FOLDED_ROWS_TOLD = 2_000;

/** Where the fold stood when a step read it: what other processes folded shows as a move. */
export interface FoldPosition {
  /** The position when the step began: every event up to this id was folded in. */
  from: number;
  /** The position when it ended (`from` when it folded nothing). */
  through: number;
  /** The count of rebuilds of the aggregates. */
  rebuilds: number;
}

export interface FoldResult {
  /** Events folded in by this step. */
  folded: number;
  /** Whether more events were waiting than one step takes. */
  more: boolean;
  /** Events stored past the position when the step ended, as far as it saw (newer ones may have come). */
  behind: number;
  /** Another instance held the turn (PostgreSQL): nothing was folded here, and `behind` is from before its step. */
  skipped?: true;
  changes: FoldedKeys;
  /** Where the fold stood, as this step read it. */
  position?: FoldPosition;
  /** Aggregate rows the step's process keeps after it (fold-row-cache.ts), when it keeps any. */
  rowsKept?: number;
  /**
   * When the oldest event stored and not yet folded in, as the step ended, was received (ISO);
   * absent when none was waiting. What intake is held against (src/aggregates/folder.ts).
   */
  waitingSince?: string;
}

interface FoldStore {
  db: Kysely<Schema>;
  caps: DialectCapabilities;
  ingestWrites: IngestWrites;
}

/**
 * One fold step: the events stored since the last step, up to `chunk` of them, added to the
 * lookup aggregates in one transaction that also moves the position, so a crash loses both or
 * neither and the next step starts where the last one committed. Each event counts in the scope
 * its account has when it is folded (the shared data set while the account is trusted), as a
 * rebuild counts it. With `rows`, the aggregate rows this process's last step wrote are not
 * read back (fold-row-cache.ts).
 */
export async function foldStep(store: FoldStore, chunk: number, rows?: FoldRowCache): Promise<FoldResult> {
  const { db, caps } = store;
  const idle: FoldResult = { folded: 0, more: false, behind: 0, changes: { numbers: [], addresses: [] } };
  // A cheap read first: an idle server must not write a transaction every few hundred ms.
  const [state, newest] = await Promise.all([foldState(db), newestEventId(db, caps.concurrentWriters)]);
  const unmoved = { from: state.through, through: state.through, rebuilds: state.rebuilds };
  if (newest <= state.through) return { ...idle, position: unmoved };
  const settledUpTo = caps.concurrentWriters ? await idsSettled(db, caps) : Number.POSITIVE_INFINITY;

  let written: FoldRowWrites | undefined;
  let result: FoldResult;
  try {
    result = await db.transaction().execute((trx) => step(trx));
  } catch (err) {
    written?.fail();
    throw err;
  }
  if (written && result.position) written.commit(result.position.through);
  return rows ? { ...result, rowsKept: rows.size } : result;

  async function step(trx: Transaction<Schema>): Promise<FoldResult> {
    // One instance folds at a time; the others skip the turn.
    if (!(await tryAdvisoryLock(trx, caps, 'fold'))) return { ...idle, behind: newest - state.through, skipped: true, position: unmoved, ...(await waitingSince(trx, state.through)) };
    if (!caps.advisoryLocks) await takeSqliteWriteLock(trx);
    const { through: from, rebuilds } = await foldState(trx);
    written = rows?.begin(from, rebuilds);
    let query = trx
      .selectFrom('events as e')
      .innerJoin('accounts as a', 'a.account_id', 'e.account_id')
      .select(['e.id', 'e.account_id', 'a.trusted', 'e.number_key', 'e.number_written', 'e.source_ip', 'e.sip_user_agent', 'e.transport_type', 'e.sip_method', 'e.event_time', 'e.created_by_node_id'])
      .where('e.id', '>', from);
    if (Number.isFinite(settledUpTo)) query = query.where('e.id', '<=', settledUpTo);
    const events = await query.orderBy('e.id').limit(chunk).execute();
    const more = events.length === chunk;
    // Past the last row read; on PostgreSQL past every settled id when all were read, so ids of
    // transactions that rolled back are not read again and again.
    const through = more || !Number.isFinite(settledUpTo) ? Number(events.at(-1)?.id ?? from) : Math.max(from, settledUpTo);
    const items: AggregateItem[] = events.map((row) => ({ scope: row.trusted ? SHARED_SCOPE : row.account_id, event: row }));
    const changes = await addToAggregates(trx, store.ingestWrites, items, written);
    await trx.updateTable('fold_state').set({ through }).where('name', '=', AGGREGATES_FOLD).execute();
    return {
      folded: events.length,
      more,
      behind: Math.max(0, newest - through),
      changes,
      position: { from, through, rebuilds },
      ...(newest > through ? await waitingSince(trx, through) : {}),
    };
  }
}

/**
 * Recomputes the aggregates in `trx` with `recompute` as the only writer of them: no fold runs
 * meanwhile, and on PostgreSQL no ingest is in flight (new ones wait for the commit), so every
 * event stored is counted once and the position can pass them all.
 */
export async function refoldAll(trx: Transaction<Schema>, caps: DialectCapabilities, recompute: () => Promise<void>): Promise<void> {
  await holdAdvisoryLock(trx, caps, 'fold');
  // Waits until no ingest transaction is in flight, holding new ones off meanwhile (ingest-writes.ts).
  await holdAdvisoryLock(trx, caps, 'foldBarrier');
  await recompute();
  const through = await newestEventId(trx, caps.concurrentWriters);
  await trx.updateTable('fold_state').set({ through }).where('name', '=', AGGREGATES_FOLD).execute();
  await countRebuild(trx);
}

/**
 * Recomputes some keys' aggregates in `trx` with no fold running meanwhile, from the events the
 * fold has counted (`recompute` is given its position): unlike refoldAll it holds no ingest
 * transaction off, and the events stored meanwhile are the fold's to count, after the commit
 * (intake still waits once the fold lags: src/aggregates/folder.ts). Counted as a rebuild, so
 * every process forgets what it keeps in memory of the aggregates.
 */
export async function refoldSome(trx: Transaction<Schema>, caps: DialectCapabilities, recompute: (through: number) => Promise<void>): Promise<void> {
  await holdAdvisoryLock(trx, caps, 'fold');
  if (!caps.advisoryLocks) await takeSqliteWriteLock(trx);
  await recompute((await foldState(trx)).through);
  await countRebuild(trx);
}

/**
 * Takes SQLite's write lock before the fold's position is read, so two processes folding one
 * file (WORKERS, a CLI beside the server) take turns instead of counting the same events twice:
 * where there is no advisory lock to take turns by.
 */
async function takeSqliteWriteLock(trx: Transaction<Schema>): Promise<void> {
  await trx.updateTable('fold_state').set({ through: sql`through` }).where('name', '=', AGGREGATES_FOLD).execute();
}

async function countRebuild(trx: Transaction<Schema>): Promise<void> {
  await trx
    .insertInto('fold_state')
    .values({ name: AGGREGATES_REBUILDS, through: 1 })
    .onConflict((oc) => oc.column('name').doUpdateSet({ through: sql`fold_state.through + 1` }))
    .execute();
}

/**
 * The keys of the events stored in (after, upTo]: what a fold over them changed, for a process
 * that did not fold them. Undefined when more than `limit` events are there (an import, a long
 * outage): reading them all would hold lookups up longer than forgetting every key.
 */
export async function keysFoldedBetween(db: Kysely<Schema>, after: number, upTo: number, limit: number): Promise<FoldedKeys | undefined> {
  const rows = await db.selectFrom('events').select(['number_key', 'source_ip']).where('id', '>', after).where('id', '<=', upTo).limit(limit + 1).execute();
  return rows.length > limit ? undefined : changesOf(rows);
}

/** When the first event past `through` was received: the age of what waits to be folded. */
async function waitingSince(db: Kysely<Schema>, through: number): Promise<{ waitingSince?: string }> {
  const row = await db.selectFrom('events').select('received_at').where('id', '>', through).orderBy('id').limit(1).executeTakeFirst();
  return row ? { waitingSince: row.received_at } : {};
}

/** The fold's position and the count of rebuilds, in one read. */
async function foldState(db: Kysely<Schema>): Promise<{ through: number; rebuilds: number }> {
  const rows = await db.selectFrom('fold_state').select(['name', 'through']).where('name', 'in', [AGGREGATES_FOLD, AGGREGATES_REBUILDS]).execute();
  const of = (name: string) => Number(rows.find((row) => row.name === name)?.through ?? 0);
  return { through: of(AGGREGATES_FOLD), rebuilds: of(AGGREGATES_REBUILDS) };
}

/** The highest event id handed out: SQLite's rowid maximum, PostgreSQL's sequence. */
async function newestEventId(db: Kysely<Schema>, fromSequence: boolean): Promise<number> {
  if (fromSequence) {
    // The sequence, not max(id): reading it costs the same however many partitions there are.
    const { rows } = await sql<{ last: string | number }>`select case when is_called then last_value else 0 end as last from events_id_seq`.execute(db);
    return Number(rows[0]?.last ?? 0);
  }
  const row = await db.selectFrom('events').select((eb) => eb.fn.max('id').as('newest')).executeTakeFirst();
  return Number(row?.newest ?? 0);
}

/** The highest id every transaction holding one of the ids up to it has ended with (PostgreSQL). */
async function idsSettled(db: Kysely<Schema>, caps: DialectCapabilities): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await holdAdvisoryLock(trx, caps, 'foldBarrier');
    return newestEventId(trx, true);
  });
}

function changesOf(events: Array<Pick<Schema['events'], 'number_key' | 'source_ip'>>): FoldedKeys {
  const numbers = new Set<string>();
  const addresses = new Set<string>();
  for (const event of events) {
    if (event.number_key !== null) numbers.add(event.number_key);
    addresses.add(event.source_ip);
  }
  return { numbers: [...numbers], addresses: [...addresses] };
}

/**
 * Values in the global order of their keys (ingests and folds take row locks in one order: no
 * deadlocks). The default sort compares UTF-16 code units, as `<` does, without a comparator call.
 */
function sortedValues<T>(map: Map<string, T>): T[] {
  return [...map.keys()].sort().map((key) => map.get(key)!);
}

/** The fields of an event its lookup aggregates count, and the scope it counts in. */
export interface AggregateItem {
  scope: string;
  event: Pick<Schema['events'], 'number_key' | 'number_written' | 'source_ip' | 'sip_user_agent' | 'transport_type' | 'sip_method' | 'event_time' | 'created_by_node_id'>;
}

/** What a fold adds to one wide aggregate row: a span of sightings and three maps of named counts. */
interface Delta {
  scope: string;
  key: string;
  count: number;
  first: string;
  last: string;
  /** Members of the key's distinct set (source addresses, numbers) that are new to the store. */
  fresh: number;
  counts: [Map<string, number>, Map<string, number>, Map<string, number>];
}

const SEP = '\u0000';

/**
 * Adds events to their scopes' number and address aggregates: the distinct sets first (to learn
 * which members are new), then one row per scope and key, read, merged here and written whole,
 * whatever the number of events (rows `kept` holds are not read). Answers the keys it changed.
 */
export async function addToAggregates(trx: Transaction<Schema>, writes: IngestWrites, items: AggregateItem[], kept?: FoldRowWrites): Promise<FoldedKeys> {
  if (items.length === 0) return { numbers: [], addresses: [] };
  const numbers = new Map<string, Delta>();
  const addresses = new Map<string, Delta>();
  const numberSources = new Map<string, [string, string, string]>();
  for (const { scope, event } of items) {
    const address = widen(addresses, scope, event.source_ip, event.event_time);
    // An empty or NOT_FOUND user agent names no program: the address is counted, the agent not.
    if (!isAbsentValue(event.sip_user_agent)) addCount(address.counts[0], userAgentKey(event.sip_user_agent), 1);
    addCount(address.counts[1], event.transport_type, 1);
    addCount(address.counts[2], event.created_by_node_id, 1);
    if (event.number_key === null) continue;
    const number = widen(numbers, scope, event.number_key, event.event_time);
    addCount(number.counts[0], event.sip_method, 1);
    addCount(number.counts[1], event.number_written ?? event.number_key, 1);
    addCount(number.counts[2], event.created_by_node_id, 1);
    const member = `${scope}${SEP}${event.number_key}${SEP}${event.source_ip}`;
    if (!numberSources.has(member)) numberSources.set(member, [scope, event.number_key, event.source_ip]);
  }
  const newPairs = await addMembers(trx, writes, 'number_sources', numberSources, numbers);
  // `ip_numbers` holds the same pairs as `number_sources`, keyed by address, in the scopes that
  // keep them twice (distinct-sets.ts; every writer of either writes both, from the same events in
  // the same scope): a pair already in one is in the other, so only the new ones go there. A busy
  // (number, address) pair is in most steps, and this saves its second insert. In the shared data
  // set a pair new by number is new to its address too. After a trust change, until `aggregates
  // rebuild`, a retention pass may recount a number's pairs in the account's new scope but not its
  // addresses'; their distinct counts in that scope may then miss those pairs, as the rows of
  // events counted in the old scope are off until that rebuild (docs/operations.md).
  const ipNumbers = new Map<string, [string, string, string]>();
  for (const [scope, number, address] of newPairs) {
    if (keepsPairsByAddress(scope)) ipNumbers.set(`${scope}${SEP}${address}${SEP}${number}`, [scope, address, number]);
    else addresses.get(`${scope}${SEP}${address}`)!.fresh += 1;
  }
  await addMembers(trx, writes, 'ip_numbers', ipNumbers, addresses);
  const numberDeltas = sortedValues(numbers);
  // Before the number rows are written: it alerts the numbers that have no row yet.
  await enqueueFirstSeen(trx, numberDeltas.map((d) => ({ scope: d.scope, numberKey: d.key, firstSeen: d.first })));
  const numberRows = await addRows(trx, writes, 'number_aggregates', numberDeltas, kept);
  // A number's hash is written once, with its first row in a scope (range lookups, docs/api.md §13).
  await writes.addMembers(trx, 'number_hashes', numberRows.created.map((d): [string, string, string] => [d.scope, numberHash(d.key), d.key]));
  await addToRanges(trx, writes, items, numberRows.created);
  const addressDeltas = sortedValues(addresses);
  const addressRows = await addRows(trx, writes, 'ip_aggregates', addressDeltas, kept);
  const changes: FoldedKeys = { numbers: distinctKeys(numberDeltas), addresses: distinctKeys(addressDeltas) };
  if (numberRows.rows.length + addressRows.rows.length <= FOLDED_ROWS_TOLD) changes.rows = { numbers: numberRows.rows, addresses: addressRows.rows };
  return changes;
}

/**
 * Adds events to their number ranges' rows (src/domain/number-range.ts): counts, sightings and
 * INVITEs from the events, distinct sources and nodes from the range's sets, and distinct numbers
 * from the number rows this step made (`created`): a number's first row in a scope is its first
 * sighting there, so each is counted once, exactly, without a set of its own.
 */
async function addToRanges(trx: Transaction<Schema>, writes: IngestWrites, items: AggregateItem[], created: Delta[]): Promise<void> {
  const ranges = new Map<string, RangeAddition>();
  const sources = new Map<string, [string, string, string]>();
  const nodes = new Map<string, [string, string, string]>();
  for (const { scope, event } of items) {
    const range = event.number_key === null ? null : rangeOfNumberKey(event.number_key);
    if (range === null) continue;
    const id = `${scope}${SEP}${range}`;
    let row = ranges.get(id);
    if (!row) {
      row = { scope, range_prefix: range, seen_count: 0, first_seen: event.event_time, last_seen: event.event_time, number_count: 0, source_ip_count: 0, node_count: 0, invite_count: 0 };
      ranges.set(id, row);
    }
    row.seen_count += 1;
    if (event.event_time < row.first_seen) row.first_seen = event.event_time;
    if (event.event_time > row.last_seen) row.last_seen = event.event_time;
    if (event.sip_method === 'INVITE') row.invite_count += 1;
    sources.set(`${id}${SEP}${event.source_ip}`, [scope, range, event.source_ip]);
    nodes.set(`${id}${SEP}${event.created_by_node_id}`, [scope, range, event.created_by_node_id]);
  }
  if (ranges.size === 0) return;
  for (const d of created) {
    const range = rangeOfNumberKey(d.key);
    if (range !== null) ranges.get(`${d.scope}${SEP}${range}`)!.number_count += 1;
  }
  for (const [table, members, column] of [
    ['range_sources', sources, 'source_ip_count'],
    ['range_nodes', nodes, 'node_count'],
  ] as const) {
    const rows = sortedValues(members);
    const added = await writes.addMembers(trx, table, rows);
    rows.forEach(([scope, range], i) => {
      if (added[i]) ranges.get(`${scope}${SEP}${range}`)![column] += 1;
    });
  }
  // The instant the publisher of the ranges' TAXII collection reads the shared ones' changes by.
  await writes.addToRanges(trx, sortedValues(ranges), new Date().toISOString());
}

/** The keys of deltas, once each across scopes. */
function distinctKeys(deltas: Delta[]): string[] {
  return [...new Set(deltas.map((d) => d.key))];
}

/** The delta of (scope, key), made on first use, widened by one sighting at `time`. */
function widen(deltas: Map<string, Delta>, scope: string, key: string, time: string): Delta {
  const id = `${scope}${SEP}${key}`;
  let delta = deltas.get(id);
  if (!delta) {
    delta = { scope, key, count: 0, first: time, last: time, fresh: 0, counts: [new Map(), new Map(), new Map()] };
    deltas.set(id, delta);
  }
  delta.count += 1;
  if (time < delta.first) delta.first = time;
  if (time > delta.last) delta.last = time;
  return delta;
}

/**
 * Adds (scope, key, member) triples to a distinct set; each new one widens its key's distinct
 * count. Answers the triples that were new.
 */
async function addMembers(trx: Transaction<Schema>, writes: IngestWrites, table: SetTable, members: Map<string, [string, string, string]>, deltas: Map<string, Delta>): Promise<Array<[string, string, string]>> {
  const rows = sortedValues(members);
  const added = await writes.addMembers(trx, table, rows);
  return rows.filter((row, i) => {
    if (added[i]) deltas.get(`${row[0]}${SEP}${row[1]}`)!.fresh += 1;
    return added[i];
  });
}

/**
 * Merges deltas into their kept rows: counts add up, the first sighting is the earlier one and
 * the last the later one, named counts merge under the KEPT_NAMES bound. Answers the rows
 * written and the deltas that made new ones. Rows `cache` keeps are taken from it, and every
 * row written is told to it.
 */
async function addRows(trx: Transaction<Schema>, writes: IngestWrites, table: AggregateTable, ordered: Delta[], cache?: FoldRowWrites): Promise<{ rows: AggregateRow[]; created: Delta[] }> {
  // One instant for the step: every row it makes or changes is a new version as of now.
  const now = new Date().toISOString();
  const kept = new Map<string, AggregateRow>();
  const unread: Array<[string, string]> = [];
  for (const d of ordered) {
    const id = `${d.scope}${SEP}${d.key}`;
    const row = cache?.get(table, id);
    if (row) kept.set(id, row);
    else unread.push([d.scope, d.key]);
  }
  for (const row of await writes.readAggregates(trx, table, unread)) kept.set(`${row.scope}${SEP}${row.key}`, row);
  const created: Delta[] = [];
  const rows = ordered.map((delta): AggregateRow => {
    const row = kept.get(`${delta.scope}${SEP}${delta.key}`);
    if (!row) {
      created.push(delta);
      return {
        scope: delta.scope,
        key: delta.key,
        seen_count: delta.count,
        first_seen: delta.first,
        last_seen: delta.last,
        distinct_count: delta.fresh,
        counts: [countsJson(delta.counts[0]), countsJson(delta.counts[1]), countsJson(delta.counts[2])],
        published_at: now,
        changed_at: now,
      };
    }
    return {
      scope: delta.scope,
      key: delta.key,
      seen_count: row.seen_count + delta.count,
      first_seen: delta.first < row.first_seen ? delta.first : row.first_seen,
      last_seen: delta.last > row.last_seen ? delta.last : row.last_seen,
      distinct_count: row.distinct_count + delta.fresh,
      counts: [merged(row.counts[0], delta.counts[0]), merged(row.counts[1], delta.counts[1]), merged(row.counts[2], delta.counts[2])],
      // A row folded before migration 018 was published with its first sighting as `created`: kept so.
      published_at: row.published_at ?? row.first_seen,
      changed_at: now,
    };
  });
  await writes.writeAggregates(trx, table, rows);
  if (cache) for (const row of rows) cache.wrote(table, `${row.scope}${SEP}${row.key}`, row);
  return { rows, created };
}

function merged(keptJson: string, added: Map<string, number>): string {
  const counts = countsOf(keptJson);
  for (const [name, n] of added) addCount(counts, name, n);
  return countsJson(counts);
}

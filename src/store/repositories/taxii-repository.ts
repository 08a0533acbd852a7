import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { KeptAggregate } from '../../domain/intelligence/feed-service.ts';
import type { IpAggregate, NumberAggregate, RangeAggregate } from '../../domain/lookups/lookup-aggregates.ts';
import type { IndicatorKind, StixIndicator } from '../../domain/intelligence/stix-indicators.ts';
import type { TaxiiReads, VersionPage, VersionQuery } from '../../domain/intelligence/taxii-collections.ts';
import { changesReadFrom, type CandidatePage, type PublicationState, type StateChange, type TaxiiPublicationStore } from '../../domain/intelligence/taxii-publication.ts';
import type { Candidate, NewVersion, PublishedObject } from '../../domain/intelligence/taxii-versions.ts';
import type { PeerValueKind } from '../../domain/federation/peer-evidence.ts';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import { holdAdvisoryLock } from '../advisory-locks.ts';
import { AGGREGATES_FOLD, AGGREGATES_REBUILDS } from '../fold/aggregate-fold.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { ADDRESSES, FEED_TOP_USER_AGENTS, keptColumns, NUMBERS, RANGE_KEPT_COLUMNS, rangeOfRow, type KeptRow, type KeptShape, type RangeKeptRow } from './feeds-repository.ts';
import { chunks } from '../fold/ingest-writes.ts';
import { ipAggregateOf, numberAggregateOf } from './lookups-repository.ts';
import type { Schema } from '../schema.ts';

/** Rows per insert statement: seven parameters each, well inside both stores' limits. */
const ROWS_PER_INSERT = 200;
/** Versions deleted per statement by the retention. */
const PRUNE_BATCH = 5000;
/**
 * Most entries of the change log a publication deletes. After a rebuild of millions of shared
 * rows the log holds one entry per row; deleted in one statement, they would hold SQLite's one
 * writer (and intake behind it) for seconds. The rest goes with the publications after.
 */
export const LOG_PRUNE_BATCH = 20_000;

/** The collections of numbers and addresses: their rows have a shape, and versions of their own (migration 018). */
type KeyedKind = Exclude<IndicatorKind, 'number-ranges'>;
const SHAPES: Record<KeyedKind, KeptShape> = { 'phone-numbers': NUMBERS, 'ip-addresses': ADDRESSES };
/** The aggregate table whose shared rows' changes (`shared_changes.aggregates`) a collection reads. */
const LOGGED: Record<IndicatorKind, string> = { 'phone-numbers': NUMBERS.table, 'ip-addresses': ADDRESSES.table, 'number-ranges': 'range_aggregates' };

/**
 * The TAXII collections in the SQL store (migration 019): the publisher's reads of the shared
 * data set's aggregates and its writes of versions, and the collections' reads of them.
 */
export class SqlTaxiiRepository implements TaxiiPublicationStore, TaxiiReads {
  private readonly db: Kysely<Schema>;
  private readonly caps: DialectCapabilities;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities) {
    this.db = db;
    this.caps = caps;
  }

  async stateOf(kind: IndicatorKind): Promise<PublicationState | undefined> {
    const row = await this.db
      .selectFrom('taxii_publication')
      .select(['fold_seen', 'changed_through', 'swept_hour', 'first_pass_next', 'first_pass_through', 'first_pass_hour', 'peers_seq', 'peers_signature', 'peers_checked'])
      .where('collection', '=', kind)
      .executeTakeFirst();
    if (!row) return undefined;
    const { first_pass_next: next, first_pass_through: through, first_pass_hour: hour } = row;
    return {
      foldSeen: row.fold_seen ?? undefined,
      changedThrough: row.changed_through ?? undefined,
      sweptHour: row.swept_hour ?? undefined,
      ...(next !== null && through !== null && hour !== null ? { firstPass: { next, through, hour } } : {}),
      ...(row.peers_seq !== null && row.peers_signature !== null && row.peers_checked !== null ? { peers: { seq: Number(row.peers_seq), signature: row.peers_signature, checked: row.peers_checked } } : {}),
    };
  }

  async foldSignature(): Promise<string> {
    const rows = await this.db.selectFrom('fold_state').select(['name', 'through']).where('name', 'in', [AGGREGATES_FOLD, AGGREGATES_REBUILDS]).execute();
    const of = (name: string) => String(rows.find((row) => row.name === name)?.through ?? 0);
    return `${of(AGGREGATES_FOLD)}/${of(AGGREGATES_REBUILDS)}`;
  }

  async claim(kind: IndicatorKind, holder: string, now: string, until: string): Promise<PublicationState | undefined> {
    await this.db.insertInto('taxii_publication').values({ collection: kind }).onConflict((oc) => oc.column('collection').doNothing()).execute();
    const claimed = await this.db
      .updateTable('taxii_publication')
      .set({ holder, lease_until: until })
      .where('collection', '=', kind)
      .where((eb) => eb.or([eb('holder', '=', holder), eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) === 1 ? this.stateOf(kind) : undefined;
  }

  async release(kind: IndicatorKind, holder: string): Promise<void> {
    await this.db.updateTable('taxii_publication').set({ holder: null, lease_until: null }).where('collection', '=', kind).where('holder', '=', holder).execute();
  }

  async latestChange(kind: IndicatorKind): Promise<string | undefined> {
    // The log's newest entry of the table: the end of its primary key.
    const row = await this.db.selectFrom('shared_changes').select((eb) => eb.fn.max('changed').as('latest')).where('aggregates', '=', LOGGED[kind]).executeTakeFirst();
    return row?.latest ?? undefined;
  }

  /**
   * The log of migration 024 from `since` on, `limit` entries in (change, key) order, a page
   * starting just past the last entry of the one before (a row value both stores seek to), then
   * the rows whose latest change those entries are: an entry of a row changed again since is
   * skipped (the row is read at its later entry), so each row comes once, as through the index
   * this log replaced, and a page may carry fewer rows than entries. Two plain reads by primary
   * key, rather than one join, so that neither store's planner can read every shared row for a
   * page: PostgreSQL without statistics on the log hashed both tables and sorted the lot.
   */
  async changedAfter(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage> {
    const after = page === undefined ? undefined : splitPage(page);
    const entries = await this.db
      .selectFrom('shared_changes')
      .select(['changed', 'key'])
      .where('aggregates', '=', LOGGED[kind])
      .where(after ? sql<SqlBool>`(changed, key) > (${after[0]}, ${after[1]})` : sql<SqlBool>`changed > ${since}`)
      .orderBy('changed')
      .orderBy('key')
      .limit(limit)
      .execute();
    const keys = [...new Set(entries.map((e) => e.key))];
    let found: Array<Omit<Candidate, 'object'>>;
    if (kind === 'number-ranges') {
      // A range row keeps no instant of its last change: each range of the page comes once, and
      // one changed again since comes again later, which publishes nothing when nothing differs.
      const current = new Map((await this.sharedRanges(keys)).map((row) => [row.key, row]));
      found = keys.flatMap((key) => (current.has(key) ? [{ value: key, kept: rangeKeptOf(current.get(key)!) }] : []));
    } else {
      const current = new Map((await this.sharedRows(SHAPES[kind], keys)).map((row) => [row.key, row]));
      const live = entries.map((e) => current.get(e.key)).filter((row, i): row is KeptRow => row?.changed_at === entries[i]!.changed);
      found = live.map((row) => ({ value: row.key, kept: keptOf(kind, row) }));
    }
    const last = entries.at(-1);
    return {
      candidates: await this.withObjects(kind, found),
      next: entries.length < limit || !last ? undefined : joinPage(last.changed, last.key),
      ...(last ? { changedThrough: last.changed } : {}),
    };
  }

  /**
   * Shared rows last seen from `since` on, in (last_seen, key) order, through the feeds' index, a
   * page after the last row of the one before.
   */
  async seenSince(kind: IndicatorKind, since: string, page: string | undefined, limit: number): Promise<CandidatePage> {
    if (kind === 'number-ranges') return this.rangesSeenSince(since, page, limit);
    const shape = SHAPES[kind];
    const after = page === undefined ? undefined : splitPage(page);
    // The table's own columns, qualified: an ORDER BY of an output column's name would sort the
    // output, every shared row of the table before a page is cut.
    const [at, key] = [sql.ref(`${shape.table}.last_seen`), sql.ref(`${shape.table}.${shape.key}`)];
    // After the first page, the index range starts just past the last row read, as a row value
    // both stores seek to: each page reads its own rows only, many rows with one instant included.
    const query = after ? this.keptRows(shape).where(sql<SqlBool>`(${at}, ${key}) > (${after[0]}, ${after[1]})`) : this.keptRows(shape).where(sql<SqlBool>`${at} >= ${since}`);
    const rows = (await query.orderBy(at).orderBy(key).limit(limit).execute()) as KeptRow[];
    const last = rows.at(-1);
    return {
      candidates: await this.withObjects(kind, rows.map((row) => ({ value: row.key, kept: keptOf(kind, row) }))),
      next: rows.length < limit || !last ? undefined : joinPage(last.last_seen, last.key),
    };
  }

  async liveObjects(kind: IndicatorKind, page: string | undefined, limit: number): Promise<CandidatePage> {
    let query = this.db.selectFrom('taxii_objects').selectAll().where('collection', '=', kind).where('revoked', '=', 0);
    if (page !== undefined) query = query.where('value', '>', page);
    const objects = await query.orderBy('value').limit(limit).execute();
    const values = objects.map((o) => o.value);
    const kept = new Map<string, Candidate['kept']>(
      kind === 'number-ranges' ? (await this.sharedRanges(values)).map((row) => [row.key, rangeKeptOf(row)]) : (await this.sharedRows(SHAPES[kind], values)).map((row) => [row.key, keptOf(kind, row)]),
    );
    return {
      candidates: objects.map((o) => ({ value: o.value, kept: kept.get(o.value), object: objectOf(o) })),
      next: objects.length < limit ? undefined : objects.at(-1)!.value,
    };
  }

  async peerValuesAfter(kind: PeerValueKind, after: number, through: number, limit: number): Promise<Array<{ value: string; seq: number }>> {
    const rows = await this.db.selectFrom('peer_indicators').select(['value', 'seq']).where('seq', '>', after).where('seq', '<=', through).where('kind', '=', kind).orderBy('seq').limit(limit).execute();
    return rows.map((row) => ({ value: row.value, seq: Number(row.seq) }));
  }

  async candidatesOf(kind: IndicatorKind, values: string[]): Promise<Candidate[]> {
    if (kind === 'number-ranges') throw new Error('candidatesOf reads numbers and addresses only');
    const kept = new Map((await this.sharedRows(SHAPES[kind], values)).map((row) => [row.key, keptOf(kind, row)]));
    return this.withObjects(kind, values.map((value) => ({ value, kept: kept.get(value) })));
  }

  async latestBodies(kind: IndicatorKind, objectIds: string[]): Promise<Map<string, StixIndicator>> {
    const bodies = new Map<string, StixIndicator>();
    for (const ids of chunks(objectIds, 500)) {
      const rows = await this.db.selectFrom('taxii_versions').select(['object_id', 'body']).where('collection', '=', kind).where('object_id', 'in', ids).where('latest', '=', 1).execute();
      for (const row of rows) bodies.set(row.object_id, JSON.parse(row.body) as StixIndicator);
    }
    return bodies;
  }

  async publish(kind: IndicatorKind, holder: string, versions: NewVersion[], state: StateChange, leaseUntil: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      // A write first: it takes SQLite's one write lock, and on PostgreSQL the row's lock, so a
      // process that claims the lease meanwhile waits for this commit and then finds it renewed.
      const moved = await trx
        .updateTable('taxii_publication')
        .set({
          lease_until: leaseUntil,
          ...(state.foldSeen !== undefined ? { fold_seen: state.foldSeen } : {}),
          ...(state.changedThrough !== undefined ? { changed_through: state.changedThrough } : {}),
          ...(state.sweptHour !== undefined ? { swept_hour: state.sweptHour } : {}),
          ...(state.firstPass !== undefined
            ? { first_pass_next: state.firstPass?.next ?? null, first_pass_through: state.firstPass?.through ?? null, first_pass_hour: state.firstPass?.hour ?? null }
            : {}),
          ...(state.peers !== undefined ? { peers_seq: String(state.peers.seq), peers_signature: state.peers.signature, peers_checked: state.peers.checked } : {}),
        })
        .where('collection', '=', kind)
        .where('holder', '=', holder)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) return false;
      // What no pass reads again: the log's entries before where the next one reads from, at
      // most LOG_PRUNE_BATCH of them. They are at its head, so this deletes a range of its pages,
      // not entries spread through it.
      if (state.changedThrough !== undefined) {
        const table = LOGGED[kind];
        const readPast = changesReadFrom(state.changedThrough);
        // The last entry of the batch, so that the delete is one range of the primary key.
        const last = await trx
          .selectFrom('shared_changes')
          .select(['changed', 'key'])
          .where('aggregates', '=', table)
          .where('changed', '<', readPast)
          .orderBy('changed')
          .orderBy('key')
          .limit(1)
          .offset(LOG_PRUNE_BATCH - 1)
          .executeTakeFirst();
        let forget = trx.deleteFrom('shared_changes').where('aggregates', '=', table).where('changed', '<', readPast);
        if (last) forget = forget.where(sql<SqlBool>`(changed, key) <= (${last.changed}, ${last.key})`);
        await forget.execute();
      }
      if (versions.length === 0) return true;
      // The collections hand out date_added from one sequence: one transaction at a time.
      await holdAdvisoryLock(trx, this.caps, 'taxiiVersions');
      const newest = await trx.selectFrom('taxii_versions').select((eb) => eb.fn.max('added_ms').as('newest')).executeTakeFirst();
      // Later than every version before, and than now: unique, whole milliseconds, in commit order.
      let added = Math.max(Date.now(), Number(newest?.newest ?? 0) + 1);
      const superseded = versions.map((v) => v.object.objectId);
      for (const ids of chunks(superseded, 500)) {
        await trx.updateTable('taxii_versions').set({ latest: 0 }).where('collection', '=', kind).where('object_id', 'in', ids).where('latest', '=', 1).execute();
      }
      const rows = versions.map((v) => ({
        added_ms: added++,
        collection: kind,
        object_id: v.object.objectId,
        modified: v.body.modified,
        latest: 1,
        body: JSON.stringify(v.body),
      }));
      for (const part of chunks(rows, ROWS_PER_INSERT)) await trx.insertInto('taxii_versions').values(part).execute();
      const objects = versions.map(({ object: o }) => ({
        collection: kind,
        value: o.value,
        generation: o.generation,
        object_id: o.objectId,
        created: o.created,
        modified: o.modified,
        revoked: o.revoked ? 1 : 0,
        fingerprint: o.fingerprint,
      }));
      for (const part of chunks(objects, ROWS_PER_INSERT)) {
        await trx
          .insertInto('taxii_objects')
          .values(part)
          .onConflict((oc) =>
            oc.columns(['collection', 'value']).doUpdateSet((eb) => ({
              generation: eb.ref('excluded.generation'),
              object_id: eb.ref('excluded.object_id'),
              created: eb.ref('excluded.created'),
              modified: eb.ref('excluded.modified'),
              revoked: eb.ref('excluded.revoked'),
              fingerprint: eb.ref('excluded.fingerprint'),
            })),
          )
          .execute();
      }
      return true;
    });
  }

  prune(kind: IndicatorKind, cutoff: string): Promise<number> {
    return pruneInBatches(() => this.pruneBatch(kind, cutoff));
  }

  /** One statement of the retention: up to PRUNE_BATCH versions, the number deleted. */
  async pruneBatch(kind: IndicatorKind, cutoff: string): Promise<number> {
    // Superseded versions, and every version of a revoked object (its revocation included).
    const doomed = this.db
      .selectFrom('taxii_versions as v')
      .select('v.added_ms')
      .where('v.collection', '=', kind)
      .where('v.added_ms', '<', Date.parse(cutoff))
      .where((eb) =>
        eb.or([
          eb('v.latest', '=', 0),
          eb.not(eb.exists(eb.selectFrom('taxii_objects as o').select('o.value').where('o.collection', '=', kind).whereRef('o.object_id', '=', 'v.object_id').where('o.revoked', '=', 0))),
        ]),
      )
      .limit(PRUNE_BATCH);
    const result = await this.db.deleteFrom('taxii_versions').where('added_ms', 'in', doomed).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async page(query: VersionQuery): Promise<VersionPage> {
    let select = this.db
      .selectFrom('taxii_versions as v')
      .select(['v.added_ms', 'v.object_id', 'v.modified', 'v.body'])
      .where('v.collection', '=', query.collection)
      .where('v.added_ms', '>', query.afterMs);
    if (query.ids) select = select.where('v.object_id', 'in', query.ids);
    const { versions } = query;
    if (!versions.all) {
      select = select.where((eb) => {
        const either: Array<ReturnType<typeof eb<'v.latest', '=', number>> | ReturnType<typeof sql<SqlBool>>> = [];
        if (versions.last) either.push(eb('v.latest', '=', 1));
        if (versions.first) {
          either.push(sql<SqlBool>`v.added_ms = (select min(f.added_ms) from taxii_versions f where f.collection = v.collection and f.object_id = v.object_id)`);
        }
        if (versions.modified.length > 0) either.push(eb('v.modified', 'in', versions.modified));
        return eb.or(either as never);
      });
    }
    const rows = await select.orderBy('v.added_ms').limit(query.limit + 1).execute();
    return {
      versions: rows.slice(0, query.limit).map((r) => ({ addedMs: Number(r.added_ms), objectId: r.object_id, modified: r.modified, body: r.body })),
      more: rows.length > query.limit,
    };
  }

  async objectKept(kind: IndicatorKind, objectId: string): Promise<boolean> {
    const row = await this.db.selectFrom('taxii_versions').select('added_ms').where('collection', '=', kind).where('object_id', '=', objectId).limit(1).executeTakeFirst();
    return row !== undefined;
  }

  /**
   * The shared rows of these keys, each found by its primary key. On PostgreSQL an IN list was
   * planned, on a table never analysed, as a read of every shared row filtered by the list
   * (test/store/taxii-reads.test.ts): a lateral subquery with a LIMIT is a lookup per key.
   */
  private sharedRows(shape: KeptShape, keys: string[]): Promise<KeptRow[]> {
    return this.byKeys<KeptRow>(this.keptRows(shape), `${shape.table}.${shape.key}`, keys);
  }

  /** The shared data set's rows of these ranges, each found by its primary key, as sharedRows. */
  private sharedRanges(prefixes: string[]): Promise<RangeKeptRow[]> {
    return this.byKeys<RangeKeptRow>(this.rangeRows(), 'range_aggregates.range_prefix', prefixes);
  }

  private async byKeys<R>(rows: SelectQueryBuilder<any, any, any>, column: string, keys: string[]): Promise<R[]> {
    if (keys.length === 0) return [];
    if (!this.caps.lateralJoins) {
      const found: R[] = [];
      for (const part of chunks(keys, 500)) found.push(...((await rows.where(column, 'in', part).execute()) as R[]));
      return found;
    }
    const row = rows.where(sql<SqlBool>`${sql.ref(column)} = k.value`).limit(1);
    const { rows: found } = await sql<R>`select r.* from unnest(cast(${keys} as text[])) as k(value) cross join lateral (${row}) as r`.execute(this.db);
    return found;
  }

  /**
   * Shared ranges last seen from `since` on, in (last_seen, prefix) order, through migration 027's
   * `(scope, last_seen, range_prefix)` index, a page after the last row of the one before.
   */
  private async rangesSeenSince(since: string, page: string | undefined, limit: number): Promise<CandidatePage> {
    const after = page === undefined ? undefined : splitPage(page);
    const [at, key] = [sql.ref('range_aggregates.last_seen'), sql.ref('range_aggregates.range_prefix')];
    const query = after ? this.rangeRows().where(sql<SqlBool>`(${at}, ${key}) > (${after[0]}, ${after[1]})`) : this.rangeRows().where(sql<SqlBool>`${at} >= ${since}`);
    const rows = (await query.orderBy(at).orderBy(key).limit(limit).execute()) as RangeKeptRow[];
    const last = rows.at(-1);
    return {
      candidates: await this.withObjects('number-ranges', rows.map((row) => ({ value: row.key, kept: rangeKeptOf(row) }))),
      next: rows.length < limit || !last ? undefined : joinPage(last.last_seen, last.key),
    };
  }

  private rangeRows() {
    return (this.db as Kysely<any>)
      .selectFrom('range_aggregates')
      .select([...RANGE_KEPT_COLUMNS])
      .where(sharedScope());
  }

  /** The shared data set's rows of a table, with what a feed entry is made of. */
  private keptRows(shape: KeptShape) {
    return (this.db as Kysely<any>)
      .selectFrom(shape.table)
      .select([...keptColumns(shape)])
      .where(sharedScope());
  }

  private async withObjects(kind: IndicatorKind, found: Array<Omit<Candidate, 'object'>>): Promise<Candidate[]> {
    const objects = new Map<string, PublishedObject>();
    for (const values of chunks([...new Set(found.map((f) => f.value))], 500)) {
      const rows = await this.db.selectFrom('taxii_objects').selectAll().where('collection', '=', kind).where('value', 'in', values).execute();
      for (const row of rows) objects.set(row.value, objectOf(row));
    }
    return found.map((f) => ({ ...f, object: objects.get(f.value) }));
  }
}

/**
 * The retention, one statement of `batch` at a time until one deletes less than a batch: the
 * number deleted in all. Wherever the statements run (this thread, or the writer thread), each
 * is short, and requests get a turn between them.
 */
export async function pruneInBatches(batch: () => Promise<number>): Promise<number> {
  let removed = 0;
  for (;;) {
    const deleted = await batch();
    removed += deleted;
    if (deleted < PRUNE_BATCH) return removed;
    await nextTurn();
  }
}

/** `scope = '*shared*'` written out: a literal the planner sees, where a parameter could be any scope. */
function sharedScope() {
  return sql<SqlBool>`scope = ${sql.lit(SHARED_SCOPE)}`;
}

/**
 * A range row as the publisher scores it. Range rows keep no publication times: a range is
 * published as of its first sighting and changed as of its last, as in the STIX feed.
 */
function rangeKeptOf(row: RangeKeptRow): KeptAggregate<RangeAggregate> {
  return { key: row.key, aggregate: rangeOfRow(row), publishedAt: row.first_seen, changedAt: row.last_seen };
}

function keptOf(kind: KeyedKind, row: KeptRow): KeptAggregate<NumberAggregate | IpAggregate> {
  const aggregate = kind === 'phone-numbers' ? numberAggregateOf([row], Number(row.distinct_count)) : ipAggregateOf([row], Number(row.distinct_count), FEED_TOP_USER_AGENTS);
  return { key: row.key, aggregate, publishedAt: row.published_at, changedAt: row.changed_at };
}

function objectOf(row: { value: string; generation: number; object_id: string; created: string; modified: string; revoked: number; fingerprint: string }): PublishedObject {
  return {
    value: row.value,
    generation: Number(row.generation),
    objectId: row.object_id,
    created: row.created,
    modified: row.modified,
    revoked: Number(row.revoked) === 1,
    fingerprint: row.fingerprint,
  };
}

/**
 * A page position of (instant, key), split at the first `|`, which an ISO instant never holds.
 * Not NUL: a first pass stores its position (migration 023), and PostgreSQL's text takes no NUL.
 */
function joinPage(instant: string, key: string): string {
  return `${instant}|${key}`;
}

function splitPage(page: string): [string, string] {
  const at = page.indexOf('|');
  return [page.slice(0, at), page.slice(at + 1)];
}

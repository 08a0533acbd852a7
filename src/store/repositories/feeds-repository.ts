import { sql, type Kysely } from 'kysely';
import type { FeedKind, FeedsRepository, KeptAggregate } from '../../domain/intelligence/feed-service.ts';
import type { IpAggregate, LookupsRepository, NumberAggregate, RangeAggregate } from '../../domain/lookups/lookup-aggregates.ts';
import { AGGREGATES_FOLD } from '../fold/aggregate-fold.ts';
import { ipAggregateOf, numberAggregateOf, type LookupRow, type RangeRow } from './lookups-repository.ts';
import type { Schema } from '../schema.ts';

/** Rows read per statement: a feed of 100,000 entries is a hundred index range reads per scope. */
const PAGE = 1000;

/** User agents an address's aggregate names (as a lookup does): the feeds' and the TAXII collections' tags come from these. */
export const FEED_TOP_USER_AGENTS = 10;

/** Where a table keeps what a feed reads. */
export interface KeptShape {
  table: 'number_aggregates' | 'ip_aggregates';
  key: 'number_key' | 'source_ip';
  distinct: 'source_ip_count' | 'called_number_count';
  counts: [string, string, string];
}

export const NUMBERS: KeptShape = { table: 'number_aggregates', key: 'number_key', distinct: 'source_ip_count', counts: ['sip_methods', 'forms', 'nodes'] };
export const ADDRESSES: KeptShape = { table: 'ip_aggregates', key: 'source_ip', distinct: 'called_number_count', counts: ['user_agents', 'transports', 'nodes'] };

/** A kept row as feeds and the TAXII publisher read it: the lookup's columns, its key, and its publication times. */
export type KeptRow = LookupRow & { key: string; published_at: string; changed_at: string };

/** The columns of a KeptRow, for a select from the shape's table. */
export function keptColumns(shape: KeptShape) {
  return [
    'scope',
    `${shape.key} as key`,
    'seen_count',
    'first_seen',
    'last_seen',
    `${shape.distinct} as distinct_count`,
    `${shape.counts[0]} as first_counts`,
    `${shape.counts[1]} as second_counts`,
    `${shape.counts[2]} as third_counts`,
    // Rows folded before migration 018 were published with their first and last sightings.
    sql<string>`coalesce(published_at, first_seen)`.as('published_at'),
    sql<string>`coalesce(changed_at, last_seen)`.as('changed_at'),
  ] as const;
}

/**
 * The feeds' reads (docs/api.md §14): each scope's rows by recency, through the
 * `(scope, last_seen, key)` index of migration 013 in pages, merged here into one stream, most
 * recent first. A key kept in two scopes (the shared one and the caller's) is merged exactly as a
 * lookup merges it, at its most recent row, and its older row is skipped.
 */
export class SqlFeedsRepository implements FeedsRepository {
  private readonly db: Kysely<Schema>;
  private readonly lookups: LookupsRepository;

  constructor(db: Kysely<Schema>, lookups: LookupsRepository) {
    this.db = db;
    this.lookups = lookups;
  }

  async foldPosition(): Promise<number> {
    const row = await this.db.selectFrom('fold_state').select('through').where('name', '=', AGGREGATES_FOLD).executeTakeFirst();
    return Number(row?.through ?? 0);
  }

  recentNumbers(scopes: string[], since: string): AsyncIterable<KeptAggregate<NumberAggregate>> {
    return this.recent(NUMBERS, scopes, since, (row) => numberAggregateOf([row], Number(row.distinct_count)), (key) => this.lookups.phoneNumber(scopes, key));
  }

  recentAddresses(scopes: string[], since: string): AsyncIterable<KeptAggregate<IpAggregate>> {
    return this.recent(
      ADDRESSES,
      scopes,
      since,
      (row) => ipAggregateOf([row], Number(row.distinct_count), FEED_TOP_USER_AGENTS),
      (key) => this.lookups.ipAddress(scopes, key, FEED_TOP_USER_AGENTS),
    );
  }

  async keptAmong(kind: FeedKind, scopes: string[], since: string, keys: string[]): Promise<Set<string>> {
    const shape = kind === 'phone-numbers' ? NUMBERS : ADDRESSES;
    const found = new Set<string>();
    for (let at = 0; at < keys.length; at += 500) {
      const rows = await (this.db as Kysely<any>)
        .selectFrom(shape.table)
        .select(`${shape.key} as key`)
        .where('scope', 'in', scopes)
        .where(shape.key, 'in', keys.slice(at, at + 500))
        .where('last_seen', '>=', since)
        .execute();
      for (const row of rows) found.add(String(row.key));
    }
    return found;
  }

  async *recentRanges(scopes: string[], since: string): AsyncIterable<{ prefix: string; aggregate: RangeAggregate }> {
    // Each scope's rows by recency through migration 027's `(scope, last_seen, range_prefix)` index.
    const rows = byRecency(scopes.map((scope) => this.rangeRowsOf(scope, since)[Symbol.asyncIterator]()));
    // A range kept in more than one scope is merged by the lookups' read (its distinct counts
    // exact across the scopes), at its most recent row; its older row comes later and is skipped.
    const done = new Set<string>();
    for await (const chunk of chunked(rows, PAGE)) {
      const shared = scopes.length > 1 ? await this.rangesInSeveralScopes(scopes, chunk.map((r) => r.key)) : new Set<string>();
      for (const row of chunk) {
        if (done.has(row.key)) continue;
        if (!shared.has(row.key)) {
          yield { prefix: row.key, aggregate: rangeOfRow(row) };
          continue;
        }
        done.add(row.key);
        const aggregate = await this.lookups.numberRange(scopes, row.key);
        if (aggregate) yield { prefix: row.key, aggregate };
      }
    }
  }

  /** One scope's range rows last seen at or after `since`, most recent first, a page at a time. */
  private async *rangeRowsOf(scope: string, since: string): AsyncIterable<RangeKeptRow> {
    let after: RangeKeptRow | undefined;
    for (;;) {
      let query = this.db
        .selectFrom('range_aggregates')
        .select([...RANGE_KEPT_COLUMNS])
        .where('scope', '=', scope)
        .where('last_seen', '>=', since);
      if (after) {
        const { last_seen, key } = after;
        query = query.where((eb) => eb.or([eb('last_seen', '<', last_seen), eb.and([eb('last_seen', '=', last_seen), eb('range_prefix', '<', key)])]));
      }
      const page = (await query.orderBy('last_seen', 'desc').orderBy('range_prefix', 'desc').limit(PAGE).execute()) as unknown as RangeKeptRow[];
      yield* page;
      if (page.length < PAGE) return;
      after = page.at(-1);
    }
  }

  /** Which of `prefixes` are kept in more than one of `scopes`. */
  private async rangesInSeveralScopes(scopes: string[], prefixes: string[]): Promise<Set<string>> {
    const found = await this.db
      .selectFrom('range_aggregates')
      .select('range_prefix')
      .where('scope', 'in', scopes)
      .where('range_prefix', 'in', [...new Set(prefixes)])
      .groupBy('range_prefix')
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    return new Set(found.map((r) => String(r.range_prefix)));
  }

  private async *recent<T>(shape: KeptShape, scopes: string[], since: string, single: (row: KeptRow) => T, merged: (key: string) => Promise<T | undefined>): AsyncIterable<KeptAggregate<T>> {
    const rows = byRecency(scopes.map((scope) => this.rowsOf(shape, scope, since)[Symbol.asyncIterator]()));
    // Keys kept in more than one scope, once merged: their older rows come later and are skipped.
    const done = new Set<string>();
    for await (const chunk of chunked(rows, PAGE)) {
      const shared = scopes.length > 1 ? await this.inSeveralScopes(shape, scopes, chunk.map((r) => r.key)) : new Set<string>();
      for (const row of chunk) {
        if (done.has(row.key)) continue;
        if (!shared.has(row.key)) {
          yield { key: row.key, aggregate: single(row), publishedAt: row.published_at, changedAt: row.changed_at };
          continue;
        }
        done.add(row.key);
        const [aggregate, versions] = await Promise.all([merged(row.key), this.versionsAcross(shape, scopes, row.key)]);
        if (aggregate && versions) yield { key: row.key, aggregate, ...versions };
      }
    }
  }

  /** One scope's rows last seen at or after `since`, most recent first, a page at a time. */
  private async *rowsOf(shape: KeptShape, scope: string, since: string): AsyncIterable<KeptRow> {
    const db = this.db as Kysely<any>;
    let after: KeptRow | undefined;
    for (;;) {
      let query = db
        .selectFrom(shape.table)
        .select([...keptColumns(shape)])
        .where('scope', '=', scope)
        .where('last_seen', '>=', since);
      if (after) {
        const { last_seen, key } = after;
        query = query.where((eb) => eb.or([eb('last_seen', '<', last_seen), eb.and([eb('last_seen', '=', last_seen), eb(shape.key, '<', key)])]));
      }
      const page = (await query.orderBy('last_seen', 'desc').orderBy(shape.key, 'desc').limit(PAGE).execute()) as KeptRow[];
      yield* page;
      if (page.length < PAGE) return;
      after = page.at(-1);
    }
  }

  /** A key kept in several scopes: its first publication and its last change across them. */
  private async versionsAcross(shape: KeptShape, scopes: string[], key: string): Promise<{ publishedAt: string; changedAt: string } | undefined> {
    const row = await (this.db as Kysely<any>)
      .selectFrom(shape.table)
      .select([sql<string>`min(coalesce(published_at, first_seen))`.as('published_at'), sql<string>`max(coalesce(changed_at, last_seen))`.as('changed_at')])
      .where('scope', 'in', scopes)
      .where(shape.key, '=', key)
      .executeTakeFirst();
    return row?.published_at ? { publishedAt: row.published_at, changedAt: row.changed_at } : undefined;
  }

  /** Which of `keys` are kept in more than one of `scopes`. */
  private async inSeveralScopes(shape: KeptShape, scopes: string[], keys: string[]): Promise<Set<string>> {
    const found = await (this.db as Kysely<any>)
      .selectFrom(shape.table)
      .select(`${shape.key} as key`)
      .where('scope', 'in', scopes)
      .where(shape.key, 'in', [...new Set(keys)])
      .groupBy(shape.key)
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    return new Set(found.map((r) => String(r.key)));
  }
}

/** A range's kept row, keyed by its prefix. */
export interface RangeKeptRow extends RangeRow {
  key: string;
}

/** The columns of a RangeKeptRow, for a select from `range_aggregates`. */
export const RANGE_KEPT_COLUMNS = ['scope', 'range_prefix as key', 'seen_count', 'first_seen', 'last_seen', 'number_count', 'source_ip_count', 'node_count', 'invite_count'] as const;

/** One scope's range row as an aggregate (its counts exact: they are that scope's alone). */
export function rangeOfRow(row: RangeKeptRow): RangeAggregate {
  return {
    seenCount: Number(row.seen_count),
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
    numberCount: Number(row.number_count),
    sourceIpCount: Number(row.source_ip_count),
    nodeCount: Number(row.node_count),
    inviteCount: Number(row.invite_count),
    soleScope: row.scope,
  };
}

/** Merges streams that are each most recent first into one (ties by key, descending). */
async function* byRecency<R extends { key: string; last_seen: string }>(streams: Array<AsyncIterator<R>>): AsyncIterable<R> {
  const heads = await Promise.all(streams.map((s) => s.next()));
  for (;;) {
    let best = -1;
    heads.forEach((head, i) => {
      if (head.done) return;
      const current = heads[best]?.value as R | undefined;
      if (!current || head.value.last_seen > current.last_seen || (head.value.last_seen === current.last_seen && head.value.key > current.key)) best = i;
    });
    if (best < 0) return;
    yield heads[best]!.value as R;
    heads[best] = await streams[best]!.next();
  }
}

async function* chunked<T>(items: AsyncIterable<T>, size: number): AsyncIterable<T[]> {
  let chunk: T[] = [];
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

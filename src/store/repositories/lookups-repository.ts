import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { HashedNumber, IpAggregate, LookupKind, LookupsRepository, NumberAggregate, RangeAggregate } from '../../domain/lookups/lookup-aggregates.ts';
import { rangeOfNumberKey } from '../../domain/number-range.ts';
import { isAbsentValue } from '../../domain/events/event-fields.ts';
import { countsOf } from '../../domain/lookups/kept-counts.ts';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import type { AggregateRow } from '../fold/ingest-writes.ts';
import { PreparedQuery, type StatementRunner } from '../prepared-query.ts';
import type { Schema } from '../schema.ts';

/** One kept row of a lookup read: one per scope that has seen the key. */
export interface LookupRow {
  scope: string;
  seen_count: number | string;
  first_seen: string;
  last_seen: string;
  distinct_count: number | string;
  /** The three maps of named counts, as kept (JSON text); the third is the nodes'. */
  first_counts: string;
  second_counts: string;
  third_counts: string;
}

/**
 * Reads of the kept aggregates: one primary-key read per scope the caller may see (its own and
 * the shared one), whatever the number of stored events. Rows of the two scopes are merged here.
 */
export class SqlLookupsRepository implements LookupsRepository {
  private readonly db: Kysely<Schema>;
  private readonly runner: StatementRunner;
  /** Prepared statements by what they read and how many scopes they read it in. */
  private readonly prepared = new Map<string, PreparedQuery<LookupRow>>();

  /** Statements are built with `db` and run by `runner` (see Database.statements). */
  constructor(db: Kysely<Schema>, runner: StatementRunner) {
    this.db = db;
    this.runner = runner;
  }

  async phoneNumber(scopes: string[], numberKey: string): Promise<NumberAggregate | undefined> {
    const rows = await this.query('number', scopes.length, numberStatement).execute(...scopes, numberKey);
    if (rows.length === 0) return undefined;
    if (rows.length === 1) return { ...numberAggregateOf(rows, Number(rows[0]!.distinct_count)), soleScope: rows[0]!.scope };
    return numberAggregateOf(rows, await this.distinctUnion('number_sources', scopes, numberKey, rows));
  }

  async numbersByHashPrefix(scopes: string[], prefix: string, limit: number): Promise<HashedNumber[]> {
    // Hex digits sort below 'g': [prefix, prefix + 'g') is every hash that begins with prefix.
    const matches = await this.db
      .selectFrom('number_hashes')
      .select(['number_hash', 'number_key'])
      .distinct()
      .where('scope', 'in', scopes)
      .where('number_hash', '>=', prefix)
      .where('number_hash', '<', `${prefix}g`)
      .orderBy('number_hash')
      .limit(limit)
      .execute();
    const found: HashedNumber[] = [];
    for (const { number_hash, number_key } of matches) {
      const aggregate = await this.phoneNumber(scopes, number_key);
      if (aggregate) found.push({ hash: number_hash, key: number_key, aggregate });
    }
    return found;
  }

  async ipAddress(scopes: string[], sourceIp: string, topUserAgents: number): Promise<IpAggregate | undefined> {
    const rows = await this.query('ip', scopes.length, ipStatement).execute(...scopes, sourceIp);
    if (rows.length === 0) return undefined;
    if (rows.length === 1) return { ...ipAggregateOf(rows, Number(rows[0]!.distinct_count), topUserAgents), soleScope: rows[0]!.scope };
    return ipAggregateOf(rows, await this.distinctUnion('ip_numbers', scopes, sourceIp, rows), topUserAgents);
  }

  async numberRange(scopes: string[], prefix: string): Promise<RangeAggregate | undefined> {
    const rows = (await this.query('range', scopes.length, rangeStatement).execute(...scopes, prefix)) as unknown as RangeRow[];
    if (rows.length === 0) return undefined;
    if (rows.length === 1) return { ...rangeAggregateOf(rows), soleScope: rows[0]!.scope };
    // Seen in both scopes (the caller's own events in a range the shared data set holds too):
    // the distinct counts of the union, exact. Rare, and a range is small: read here, not prepared.
    const [first, second] = (scopes[1] === SHARED_SCOPE ? [scopes[1], scopes[0]] : scopes) as [string, string];
    const ownOnly = async (table: 'range_sources' | 'range_nodes', member: 'source_ip' | 'node_id') => {
      const { rows: [row] } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)} o
        where o.scope = ${second} and o.range_prefix = ${prefix}
          and not exists (select 1 from ${sql.table(table)} s where s.scope = ${first} and s.range_prefix = ${prefix} and s.${sql.ref(member)} = o.${sql.ref(member)})`.execute(this.db);
      return Number(row?.n ?? 0);
    };
    const firstRow = rows.find((r) => r.scope === first);
    // Its numbers are its prefix and two more characters: read both scopes' (a few hundred rows
    // at most) and keep the keys whose range it is.
    const numbers = await this.db
      .selectFrom('number_aggregates')
      .select('number_key')
      .where('scope', 'in', [first, second])
      .where('number_key', '>', prefix)
      .where('number_key', '<', `${prefix}:`)
      .where((eb) => eb(eb.fn('length', ['number_key']), '=', prefix.length + 2))
      .execute();
    const merged = rangeAggregateOf(rows);
    return {
      ...merged,
      numberCount: new Set(numbers.map((n) => n.number_key).filter((key) => rangeOfNumberKey(key) === prefix)).size,
      sourceIpCount: Number(firstRow?.source_ip_count ?? 0) + (await ownOnly('range_sources', 'source_ip')),
      nodeCount: Number(firstRow?.node_count ?? 0) + (await ownOnly('range_nodes', 'node_id')),
    };
  }

  /** The statement reading `what` over `scopeCount` scopes, prepared on first use. */
  private query(what: string, scopeCount: number, statement: (scopes: unknown[], key: unknown) => RawBuilder<LookupRow>): PreparedQuery<LookupRow> {
    const name = `${what}/${scopeCount}`;
    let prepared = this.prepared.get(name);
    if (!prepared) {
      prepared = new PreparedQuery(this.runner, scopeCount + 1, (...values) => statement(values.slice(0, scopeCount), values[scopeCount]).compile(this.db));
      this.prepared.set(name, prepared);
    }
    return prepared;
  }

  /**
   * Distinct members across two scopes: the shared scope's kept count plus the members of the
   * other (the caller's own, small) set that the shared one lacks. Only the own set is walked:
   * the shared scope keeps its pairs by number alone (distinct-sets.ts).
   */
  private async distinctUnion(table: 'number_sources' | 'ip_numbers', scopes: string[], key: string, rows: LookupRow[]): Promise<number> {
    const [first, second] = (scopes[1] === SHARED_SCOPE ? [scopes[1], scopes[0]] : scopes) as [string, string];
    const firstCount = Number(rows.find((r) => r.scope === first)?.distinct_count ?? 0);
    const [row] = await this.query(table, 2, (pair, k) => distinctStatement(table, pair, k)).execute(first, second, key);
    return firstCount + Number((row as unknown as { n: number | string } | undefined)?.n ?? 0);
  }
}

/**
 * The aggregate a key holds in one scope, from the row a fold step wrote there (FoldedRows,
 * aggregate-fold.ts): what a read of that scope alone would answer.
 */
export function aggregateOfRow(kind: LookupKind, row: AggregateRow, topUserAgents: number): NumberAggregate | IpAggregate {
  const kept: LookupRow = {
    scope: row.scope,
    seen_count: row.seen_count,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    distinct_count: row.distinct_count,
    first_counts: row.counts[0],
    second_counts: row.counts[1],
    third_counts: row.counts[2],
  };
  const aggregate = kind === 'number' ? numberAggregateOf([kept], row.distinct_count) : ipAggregateOf([kept], row.distinct_count, topUserAgents);
  return { ...aggregate, soleScope: row.scope };
}

/** A number's aggregate from its kept rows (one per scope) and its distinct sources across them. */
export function numberAggregateOf(rows: LookupRow[], sourceIpCount: number): NumberAggregate {
  return {
    ...span(rows),
    sourceIpCount,
    sipMethods: Object.fromEntries([...sumCounts(rows, 'first_counts')].sort(byName)),
    forms: [...sumCounts(rows, 'second_counts')].sort(byCountThenName).map(([written]) => written),
    nodeCount: sumCounts(rows, 'third_counts').size,
  };
}

/** An address's aggregate from its kept rows (one per scope) and its distinct numbers across them. */
export function ipAggregateOf(rows: LookupRow[], calledNumberCount: number, topUserAgents: number): IpAggregate {
  return {
    ...span(rows),
    calledNumberCount,
    // Stores folded before absent values were left out (docs/api.md §5) still hold them.
    userAgents: [...sumCounts(rows, 'first_counts')]
      .filter(([userAgent]) => !isAbsentValue(userAgent))
      .sort(byCountThenName)
      .slice(0, topUserAgents)
      .map(([user_agent, count]) => ({ user_agent, count })),
    transports: Object.fromEntries([...sumCounts(rows, 'second_counts')].sort(byName)),
    nodeCount: sumCounts(rows, 'third_counts').size,
  };
}

/** One kept row of a number range. */
export interface RangeRow {
  scope: string;
  seen_count: number | string;
  first_seen: string;
  last_seen: string;
  number_count: number | string;
  source_ip_count: number | string;
  node_count: number | string;
  invite_count: number | string;
}

/** A range's aggregate from its kept rows, its distinct counts summed (exact for one row). */
function rangeAggregateOf(rows: RangeRow[]): RangeAggregate {
  const sum = (column: 'number_count' | 'source_ip_count' | 'node_count' | 'invite_count') => rows.reduce((n, row) => n + Number(row[column]), 0);
  return {
    ...span(rows as unknown as LookupRow[]),
    numberCount: sum('number_count'),
    sourceIpCount: sum('source_ip_count'),
    nodeCount: sum('node_count'),
    inviteCount: sum('invite_count'),
  };
}

/** The kept rows of a number range in the given scopes. */
function rangeStatement(scopes: unknown[], prefix: unknown) {
  return sql<LookupRow>`
    select scope, seen_count, first_seen, last_seen, number_count, source_ip_count, node_count, invite_count
      from range_aggregates where scope in (${sql.join(scopes)}) and range_prefix = ${prefix}`;
}

/** The kept rows of a called number in the given scopes. */
function numberStatement(scopes: unknown[], numberKey: unknown) {
  return sql<LookupRow>`
    select scope, seen_count, first_seen, last_seen, source_ip_count as distinct_count, sip_methods as first_counts, forms as second_counts, nodes as third_counts
      from number_aggregates where scope in (${sql.join(scopes)}) and number_key = ${numberKey}`;
}

/** The kept rows of a source address in the given scopes. */
function ipStatement(scopes: unknown[], sourceIp: unknown) {
  return sql<LookupRow>`
    select scope, seen_count, first_seen, last_seen, called_number_count as distinct_count, user_agents as first_counts, transports as second_counts, nodes as third_counts
      from ip_aggregates where scope in (${sql.join(scopes)}) and source_ip = ${sourceIp}`;
}

/**
 * How many members the second scope's set of `key` has that the first scope's set lacks. The
 * second is walked in `table`; a member is looked for in the first by number (`number_sources`),
 * where every scope keeps its pairs, whichever kind of key is asked.
 */
function distinctStatement(table: 'number_sources' | 'ip_numbers', [first, second]: unknown[], key: unknown) {
  const [keyColumn, memberColumn] = table === 'number_sources' ? ['number_key', 'source_ip'] : ['source_ip', 'number_key'];
  return sql<LookupRow>`
    select count(*) as n from ${sql.table(table)} o
    where o.scope = ${second} and o.${sql.ref(keyColumn!)} = ${key}
      and not exists (
        select 1 from number_sources s
        where s.scope = ${first} and s.${sql.ref(keyColumn!)} = ${key} and s.${sql.ref(memberColumn!)} = o.${sql.ref(memberColumn!)}
      )`;
}

/** Sums one map of named counts over the per-scope rows. */
function sumCounts(rows: LookupRow[], which: 'first_counts' | 'second_counts' | 'third_counts'): Map<string, number> {
  const sums = new Map<string, number>();
  for (const row of rows) for (const [name, n] of countsOf(row[which])) sums.set(name, (sums.get(name) ?? 0) + n);
  return sums;
}

function byName([a]: [string, number], [b]: [string, number]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Most seen first; ties in name order, so answers are stable. */
function byCountThenName(x: [string, number], y: [string, number]): number {
  return y[1] - x[1] || byName(x, y);
}

/** Earliest first sighting, latest last sighting and total count over per-scope rows. */
function span(rows: LookupRow[]) {
  let seenCount = 0;
  let firstSeen = rows[0]!.first_seen;
  let lastSeen = rows[0]!.last_seen;
  for (const row of rows) {
    seenCount += Number(row.seen_count);
    if (row.first_seen < firstSeen) firstSeen = row.first_seen;
    if (row.last_seen > lastSeen) lastSeen = row.last_seen;
  }
  return { seenCount, firstSeen, lastSeen };
}

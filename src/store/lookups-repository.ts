import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { IpAggregate, LookupsRepository, NumberAggregate } from '../domain/lookup-aggregates.ts';
import { PreparedQuery, type StatementRunner } from './prepared-query.ts';
import type { Schema } from './schema.ts';

/** One row of a lookup read: the per-scope totals, or one named count. */
interface LookupRow {
  kind: 'stats' | 'part';
  /** For stats: the scope; for parts: the method, written form, user agent or transport. */
  name: string;
  /** For parts of an address: which part ('agent' or 'transport'). */
  part: string | null;
  n: number | string;
  first_seen: string | null;
  last_seen: string | null;
  distinct_count: number | string | null;
}

/**
 * Reads of the kept aggregates. Each lookup is one statement of primary-key range reads over
 * the caller's scope and the shared one: its cost follows what is known about that one number
 * or address, never the number of stored events. Per-scope rows are merged here, since a
 * GROUP BY across two scopes would sort in a temporary B-tree on every lookup.
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
    const stats = rows.filter((r) => r.kind === 'stats');
    if (stats.length === 0) return undefined;
    return {
      ...span(stats),
      sourceIpCount: stats.length === 1 ? Number(stats[0]!.distinct_count) : await this.distinctUnion('number_sources', scopes, numberKey, stats),
      sipMethods: Object.fromEntries([...sumParts(rows, 'method')].sort(byName)),
      forms: [...sumParts(rows, 'form')].sort(byCountThenName).map(([written]) => written),
    };
  }

  async ipAddress(scopes: string[], sourceIp: string, topUserAgents: number): Promise<IpAggregate | undefined> {
    const rows = await this.query('ip', scopes.length, ipStatement).execute(...scopes, sourceIp);
    const stats = rows.filter((r) => r.kind === 'stats');
    if (stats.length === 0) return undefined;
    return {
      ...span(stats),
      calledNumberCount: stats.length === 1 ? Number(stats[0]!.distinct_count) : await this.distinctUnion('ip_numbers', scopes, sourceIp, stats),
      userAgents: [...sumParts(rows, 'agent')]
        .sort(byCountThenName)
        .slice(0, topUserAgents)
        .map(([user_agent, count]) => ({ user_agent, count })),
      transports: Object.fromEntries([...sumParts(rows, 'transport')].sort(byName)),
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
   * Distinct members across two scopes: the first scope's kept count plus the second scope's
   * members the first lacks. Only the second (the caller's own, small) set is walked.
   */
  private async distinctUnion(table: 'number_sources' | 'ip_numbers', scopes: string[], key: string, stats: LookupRow[]): Promise<number> {
    const [first, second] = scopes as [string, string];
    const firstCount = Number(stats.find((s) => s.name === first)?.distinct_count ?? 0);
    const [row] = await this.query(table, 2, (pair, k) => distinctStatement(table, pair, k)).execute(first, second, key);
    return firstCount + Number(row?.n ?? 0);
  }
}

/** Per-scope totals of a called number, then its methods and written forms. */
function numberStatement(scopes: unknown[], numberKey: unknown) {
  const inScopes = sql.join(scopes);
  return sql<LookupRow>`
    select 'stats' as kind, scope as name, null as part, seen_count as n, first_seen, last_seen, source_ip_count as distinct_count
      from number_stats where scope in (${inScopes}) and number_key = ${numberKey}
    union all
    select 'part', sip_method, 'method', count, null, null, null from number_methods where scope in (${inScopes}) and number_key = ${numberKey}
    union all
    select 'part', written, 'form', count, null, null, null from number_forms where scope in (${inScopes}) and number_key = ${numberKey}`;
}

/** Per-scope totals of a source address, then its user agents and transports. */
function ipStatement(scopes: unknown[], sourceIp: unknown) {
  const inScopes = sql.join(scopes);
  return sql<LookupRow>`
    select 'stats' as kind, scope as name, null as part, seen_count as n, first_seen, last_seen, called_number_count as distinct_count
      from ip_stats where scope in (${inScopes}) and source_ip = ${sourceIp}
    union all
    select 'part', user_agent, 'agent', count, null, null, null from ip_user_agents where scope in (${inScopes}) and source_ip = ${sourceIp}
    union all
    select 'part', transport, 'transport', count, null, null, null from ip_transports where scope in (${inScopes}) and source_ip = ${sourceIp}`;
}

/** How many members the second scope's set of `key` has that the first scope's set lacks. */
function distinctStatement(table: 'number_sources' | 'ip_numbers', [first, second]: unknown[], key: unknown) {
  const [keyColumn, memberColumn] = table === 'number_sources' ? ['number_key', 'source_ip'] : ['source_ip', 'number_key'];
  return sql<LookupRow>`
    select count(*) as n from ${sql.table(table)} o
    where o.scope = ${second} and o.${sql.ref(keyColumn!)} = ${key}
      and not exists (
        select 1 from ${sql.table(table)} s
        where s.scope = ${first} and s.${sql.ref(keyColumn!)} = ${key} and s.${sql.ref(memberColumn!)} = o.${sql.ref(memberColumn!)}
      )`;
}

/** Sums the per-scope counts of one part by name. */
function sumParts(rows: LookupRow[], part: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const row of rows) if (row.part === part) sums.set(row.name, (sums.get(row.name) ?? 0) + Number(row.n));
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
  let firstSeen = rows[0]!.first_seen!;
  let lastSeen = rows[0]!.last_seen!;
  for (const row of rows) {
    seenCount += Number(row.n);
    if (row.first_seen! < firstSeen) firstSeen = row.first_seen!;
    if (row.last_seen! > lastSeen) lastSeen = row.last_seen!;
  }
  return { seenCount, firstSeen, lastSeen };
}

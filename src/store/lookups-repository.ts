import { sql, type Kysely } from 'kysely';
import type { IpAggregate, LookupsRepository, NumberAggregate } from '../domain/lookups.ts';
import type { Schema } from './schema.ts';

/**
 * Reads of the kept aggregates. Each lookup touches one primary-key row per scope plus the
 * number's small per-method / per-form / per-agent rows, so its cost follows what is known
 * about that one number or address, never the number of stored events.
 */
export class SqlLookupsRepository implements LookupsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async phoneNumber(scopes: string[], numberKey: string): Promise<NumberAggregate | undefined> {
    const stats = await this.db
      .selectFrom('number_stats')
      .selectAll()
      .where('scope', 'in', scopes)
      .where('number_key', '=', numberKey)
      .execute();
    if (stats.length === 0) return undefined;

    const [methods, forms, sourceIpCount] = await Promise.all([
      this.db
        .selectFrom('number_methods')
        .select(['sip_method', (eb) => eb.fn.sum<number | string>('count').as('n')])
        .where('scope', 'in', scopes)
        .where('number_key', '=', numberKey)
        .groupBy('sip_method')
        .orderBy('sip_method')
        .execute(),
      this.db
        .selectFrom('number_forms')
        .select(['written', (eb) => eb.fn.sum<number | string>('count').as('n')])
        .where('scope', 'in', scopes)
        .where('number_key', '=', numberKey)
        .groupBy('written')
        .orderBy('n', 'desc')
        .orderBy('written')
        .execute(),
      stats.length === 1
        ? Number(stats[0]!.source_ip_count)
        : this.distinctUnion('number_sources', 'number_key', 'source_ip', scopes, numberKey, stats),
    ]);

    return {
      ...span(stats),
      sourceIpCount,
      sipMethods: Object.fromEntries(methods.map((m) => [m.sip_method, Number(m.n)])),
      forms: forms.map((f) => f.written),
    };
  }

  async ipAddress(scopes: string[], sourceIp: string, topUserAgents: number): Promise<IpAggregate | undefined> {
    const stats = await this.db
      .selectFrom('ip_stats')
      .selectAll()
      .where('scope', 'in', scopes)
      .where('source_ip', '=', sourceIp)
      .execute();
    if (stats.length === 0) return undefined;

    const [agents, transports, calledNumberCount] = await Promise.all([
      this.db
        .selectFrom('ip_user_agents')
        .select(['user_agent', (eb) => eb.fn.sum<number | string>('count').as('n')])
        .where('scope', 'in', scopes)
        .where('source_ip', '=', sourceIp)
        .groupBy('user_agent')
        .orderBy('n', 'desc')
        .orderBy('user_agent')
        .limit(topUserAgents)
        .execute(),
      this.db
        .selectFrom('ip_transports')
        .select(['transport', (eb) => eb.fn.sum<number | string>('count').as('n')])
        .where('scope', 'in', scopes)
        .where('source_ip', '=', sourceIp)
        .groupBy('transport')
        .orderBy('transport')
        .execute(),
      stats.length === 1
        ? Number(stats[0]!.called_number_count)
        : this.distinctUnion('ip_numbers', 'source_ip', 'number_key', scopes, sourceIp, stats),
    ]);

    return {
      ...span(stats),
      calledNumberCount,
      userAgents: agents.map((a) => ({ user_agent: a.user_agent, count: Number(a.n) })),
      transports: Object.fromEntries(transports.map((t) => [t.transport, Number(t.n)])),
    };
  }

  /**
   * Distinct members across two scopes: the first scope's kept count plus the second scope's
   * members the first lacks. Only the second (the caller's own, small) set is walked.
   */
  private async distinctUnion(
    table: 'number_sources' | 'ip_numbers',
    keyColumn: 'number_key' | 'source_ip',
    memberColumn: 'source_ip' | 'number_key',
    scopes: string[],
    key: string,
    stats: Array<{ scope: string; source_ip_count?: number | string; called_number_count?: number | string }>,
  ): Promise<number> {
    const [first, second] = scopes as [string, string];
    const firstRow = stats.find((s) => s.scope === first);
    const firstCount = Number(firstRow?.source_ip_count ?? firstRow?.called_number_count ?? 0);
    const extra = await sql<{ n: number | string }>`
      select count(*) as n from ${sql.table(table)} o
      where o.scope = ${second} and o.${sql.ref(keyColumn)} = ${key}
        and not exists (
          select 1 from ${sql.table(table)} s
          where s.scope = ${first} and s.${sql.ref(keyColumn)} = ${key} and s.${sql.ref(memberColumn)} = o.${sql.ref(memberColumn)}
        )`.execute(this.db);
    return firstCount + Number(extra.rows[0]?.n ?? 0);
  }
}

/** Earliest first sighting, latest last sighting and total count over per-scope rows. */
function span(rows: Array<{ seen_count: number | string; first_seen: string; last_seen: string }>) {
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

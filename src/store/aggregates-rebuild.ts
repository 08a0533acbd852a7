import { sql, type Kysely } from 'kysely';
import { USER_AGENT_KEPT_CHARACTERS } from '../domain/lookup-aggregates.ts';
import { SHARED_SCOPE } from '../domain/visibility.ts';
import type { Schema } from './schema.ts';

/**
 * Recomputes every lookup aggregate from the stored events, in one transaction. Needed after
 * events are removed in bulk (retention), after a bulk load, or to move an account's past
 * events into or out of the shared data set after its `trusted` flag changed: each event
 * counts in the scope its account has now.
 */
export async function rebuildAggregates(db: Kysely<Schema>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const table of ['number_stats', 'number_methods', 'number_forms', 'number_sources', 'ip_stats', 'ip_user_agents', 'ip_transports', 'ip_numbers'] as const) {
      await trx.deleteFrom(table).execute();
    }
    const scoped = sql`(select case when a.trusted = 1 then ${SHARED_SCOPE} else e.account_id end as scope, e.*
      from events e join accounts a on a.account_id = e.account_id)`;
    // Inlined, not bound: PostgreSQL matches the select list to GROUP BY by expression text.
    const kept = sql.lit(USER_AGENT_KEPT_CHARACTERS);
    const statements = [
      sql`insert into number_stats (scope, number_key, seen_count, first_seen, last_seen, source_ip_count)
          select scope, number_key, count(*), min(event_time), max(event_time), count(distinct source_ip)
          from ${scoped} s where number_key is not null group by scope, number_key`,
      sql`insert into number_methods (scope, number_key, sip_method, count)
          select scope, number_key, sip_method, count(*) from ${scoped} s where number_key is not null group by scope, number_key, sip_method`,
      sql`insert into number_forms (scope, number_key, written, count)
          select scope, number_key, coalesce(number_written, number_key), count(*) from ${scoped} s
          where number_key is not null group by scope, number_key, coalesce(number_written, number_key)`,
      sql`insert into number_sources (scope, number_key, source_ip)
          select distinct scope, number_key, source_ip from ${scoped} s where number_key is not null`,
      sql`insert into ip_stats (scope, source_ip, seen_count, first_seen, last_seen, called_number_count)
          select scope, source_ip, count(*), min(event_time), max(event_time), count(distinct number_key)
          from ${scoped} s group by scope, source_ip`,
      sql`insert into ip_user_agents (scope, source_ip, user_agent, count)
          select scope, source_ip, substr(sip_user_agent, 1, ${kept}), count(*) from ${scoped} s
          group by scope, source_ip, substr(sip_user_agent, 1, ${kept})`,
      sql`insert into ip_transports (scope, source_ip, transport, count)
          select scope, source_ip, transport_type, count(*) from ${scoped} s group by scope, source_ip, transport_type`,
      sql`insert into ip_numbers (scope, source_ip, number_key)
          select distinct scope, source_ip, number_key from ${scoped} s where number_key is not null`,
    ];
    for (const statement of statements) await statement.execute(trx);
  });
}

import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 027_number_ranges. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // Number ranges (docs/scoring.md, "Ranges"): a called number's international key less its
      // last two digits. One row per scope and range, its counts added to by the fold, and two
      // distinct sets (sources, nodes) that keep those counts exact; the distinct numbers of a
      // range are its numbers' rows in number_aggregates, counted as the fold makes them.
      const counter = caps.counterType;
      // A rowid table, unlike its sets: the filter of known keys sizes itself by its largest rowid
      // (src/store/fold/aggregate-keys.ts), which counting would hold SQLite's thread for.
      await db.schema
        .createTable('range_aggregates')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('range_prefix', 'text', (c) => c.notNull())
        .addColumn('seen_count', counter, (c) => c.notNull())
        .addColumn('first_seen', 'text', (c) => c.notNull())
        .addColumn('last_seen', 'text', (c) => c.notNull())
        .addColumn('number_count', counter, (c) => c.notNull())
        .addColumn('source_ip_count', counter, (c) => c.notNull())
        .addColumn('node_count', counter, (c) => c.notNull())
        .addColumn('invite_count', counter, (c) => c.notNull())
        .addPrimaryKeyConstraint('range_aggregates_pk', ['scope', 'range_prefix'] as never)
        .execute();
      // Feeds read each scope's rows most recently seen first, as they read numbers'.
      await db.schema.createIndex('range_aggregates_by_recency').on('range_aggregates').columns(['scope', 'last_seen', 'range_prefix']).execute();
      for (const [table, member] of [
        ['range_sources', 'source_ip'],
        ['range_nodes', 'node_id'],
      ] as const) {
        let set: CreateTableBuilder<string, string> = db.schema
          .createTable(table)
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('range_prefix', 'text', (c) => c.notNull())
          .addColumn(member, 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint(`${table}_pk`, ['scope', 'range_prefix', member] as never);
        if (caps.withoutRowid) set = set.modifyEnd(sql`without rowid`);
        await set.execute();
      }

      // The ranges of the events folded so far, counted here, in the scope their account has now,
      // as a rebuild counts them: left to a refold, a big store would hold intake back behind it.
      // The range of a key, written out as it was when this migration was made: `+`, a first
      // digit 1–9, 8 to 15 digits in all, less the last two.
      const folded = await db.selectFrom('fold_state').select('through').where('name', '=', 'aggregates').executeTakeFirst();
      const ranged = sql`(select case when a.trusted = 1 then '*shared*' else e.account_id end as scope,
          substr(e.number_key, 1, length(e.number_key) - 2) as range_prefix, e.*
        from events e join accounts a on a.account_id = e.account_id
        where e.id <= ${Number(folded?.through ?? 0)} and e.number_key is not null
          and substr(e.number_key, 1, 1) = '+' and substr(e.number_key, 2, 1) <> '0'
          and length(e.number_key) between 9 and 16 and ltrim(substr(e.number_key, 2), '0123456789') = '')`;
      await sql`insert into range_aggregates (scope, range_prefix, seen_count, first_seen, last_seen, number_count, source_ip_count, node_count, invite_count)
          select scope, range_prefix, count(*), min(event_time), max(event_time), count(distinct number_key), count(distinct source_ip),
            count(distinct created_by_node_id), sum(case when sip_method = 'INVITE' then 1 else 0 end)
          from ${ranged} r group by scope, range_prefix`.execute(db);
      await sql`insert into range_sources (scope, range_prefix, source_ip) select distinct scope, range_prefix, source_ip from ${ranged} r`.execute(db);
      await sql`insert into range_nodes (scope, range_prefix, node_id) select distinct scope, range_prefix, created_by_node_id from ${ranged} r`.execute(db);
    },
  };
}

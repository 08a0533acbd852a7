import { sql, type CreateTableBuilder, type Kysely, type RawBuilder } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 010_aggregate_fold. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // Lookup aggregates are folded in after intake commits (src/store/fold/aggregate-fold.ts),
      // from the position kept here, in wider rows: one per scope and number and one per
      // scope and address, each with its named counts inside (at most 32 names per map), so
      // a fold writes two rows per event where it wrote six, and a lookup reads one per scope.
      // Migrations run in one transaction each, so on PostgreSQL (instances wait for the
      // migration lock) no event is stored meanwhile, and every event up to the newest id is
      // counted when the position is set.
      await db.schema
        .createTable('fold_state')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('through', caps.counterType, (c) => c.notNull())
        .execute();
      // The fold reads events in id order; SQLite's rowid is that order already.
      if (caps.partitionedEvents) await db.schema.createIndex('events_by_id').on('events').column('id').execute();
      // An unpartitioned events table tells new events from stored ones by its own unique
      // (account, uuid) index: there `event_ids` only doubled every event's identity writes.
      if (!caps.partitionedEvents) await db.schema.dropTable('event_ids').execute();

      for (const table of ['number_stats', 'number_methods', 'number_forms', 'number_sources', 'ip_stats', 'ip_user_agents', 'ip_transports', 'ip_numbers']) {
        await db.schema.dropTable(table).execute();
      }
      const counter = caps.counterType;
      const keyed = (name: string, table: CreateTableBuilder<string, string>, key: string[], small = false) => {
        const made = table.addPrimaryKeyConstraint(`${name}_pk`, key as never);
        // SQLite: a table of small rows keeps them in its key's B-tree, not in a rowid table
        // beside a key index. Not the wide rows: such a B-tree keeps only about a quarter of
        // a page per row inline (230 bytes at 1 KiB), and an address's user agents spill over.
        return small && caps.withoutRowid ? made.modifyEnd(sql`without rowid`) : made;
      };
      await keyed(
        'number_aggregates',
        db.schema
          .createTable('number_aggregates')
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('number_key', 'text', (c) => c.notNull())
          .addColumn('seen_count', counter, (c) => c.notNull())
          .addColumn('first_seen', 'text', (c) => c.notNull())
          .addColumn('last_seen', 'text', (c) => c.notNull())
          .addColumn('source_ip_count', counter, (c) => c.notNull())
          .addColumn('sip_methods', 'text', (c) => c.notNull())
          .addColumn('forms', 'text', (c) => c.notNull()),
        ['scope', 'number_key'],
      ).execute();
      await keyed(
        'ip_aggregates',
        db.schema
          .createTable('ip_aggregates')
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('source_ip', 'text', (c) => c.notNull())
          .addColumn('seen_count', counter, (c) => c.notNull())
          .addColumn('first_seen', 'text', (c) => c.notNull())
          .addColumn('last_seen', 'text', (c) => c.notNull())
          .addColumn('called_number_count', counter, (c) => c.notNull())
          .addColumn('user_agents', 'text', (c) => c.notNull())
          .addColumn('transports', 'text', (c) => c.notNull()),
        ['scope', 'source_ip'],
      ).execute();
      // The distinct sets, for exact distinct counts, as before.
      for (const [table, key] of [
        ['number_sources', ['scope', 'number_key', 'source_ip']],
        ['ip_numbers', ['scope', 'source_ip', 'number_key']],
      ] as const) {
        let made: CreateTableBuilder<string, string> = db.schema.createTable(table);
        for (const column of key) made = made.addColumn(column, 'text', (c) => c.notNull());
        await keyed(table, made, [...key], true).execute();
      }
      // The new rows recomputed from every stored event, here, before any server takes intake:
      // left to the fold, a big store's backlog would hold intake back for as long as it took.
      // Written out, not today's rebuild (src/store/fold/aggregates-rebuild.ts): later migrations
      // change those tables, and this one must keep building them as they are here.
      const scoped = sql`(select case when a.trusted = 1 then '*shared*' else e.account_id end as scope, e.*
        from events e join accounts a on a.account_id = e.account_id)`;
      const numbered = sql`${scoped} s where number_key is not null`;
      const agent = sql`substr(sip_user_agent, 1, 256)`;
      const named = (from: RawBuilder<unknown>, key: RawBuilder<unknown>, name: RawBuilder<unknown>) =>
        sql`(select scope, k, cast(${sql.raw(caps.jsonObjectAgg)}(name, n) as text) as counts from (
            select scope, k, name, n, row_number() over (partition by scope, k order by n desc, name) as place
            from (select scope, ${key} as k, ${name} as name, count(*) as n from ${from} group by scope, ${key}, ${name}) c
          ) ranked where place <= 32 group by scope, k)`;
      await sql`insert into number_aggregates (scope, number_key, seen_count, first_seen, last_seen, source_ip_count, sip_methods, forms)
          select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, m.counts, f.counts
          from (select scope, number_key as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct source_ip) as d
                from ${numbered} group by scope, number_key) t
          join ${named(numbered, sql`number_key`, sql`sip_method`)} m on m.scope = t.scope and m.k = t.k
          join ${named(numbered, sql`number_key`, sql`coalesce(number_written, number_key)`)} f on f.scope = t.scope and f.k = t.k`.execute(db);
      await sql`insert into number_sources (scope, number_key, source_ip) select distinct scope, number_key, source_ip from ${numbered}`.execute(db);
      await sql`insert into ip_aggregates (scope, source_ip, seen_count, first_seen, last_seen, called_number_count, user_agents, transports)
          select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, u.counts, r.counts
          from (select scope, source_ip as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct number_key) as d
                from ${scoped} s group by scope, source_ip) t
          join ${named(sql`${scoped} s`, sql`source_ip`, agent)} u on u.scope = t.scope and u.k = t.k
          join ${named(sql`${scoped} s`, sql`source_ip`, sql`transport_type`)} r on r.scope = t.scope and r.k = t.k`.execute(db);
      await sql`insert into ip_numbers (scope, source_ip, number_key) select distinct scope, source_ip, number_key from ${numbered}`.execute(db);
      const newest = await db.selectFrom('events').select((eb) => eb.fn.max('id').as('newest')).executeTakeFirst();
      await db.insertInto('fold_state').values({ name: 'aggregates', through: Number(newest?.newest ?? 0) }).execute();
    },
  };
}

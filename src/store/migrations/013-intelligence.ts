import { createHash } from 'node:crypto';
import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 013_intelligence. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // Scores count the distinct honeypot nodes that saw a number or address (docs/scoring.md):
      // a third map of named counts (created_by_node_id → events) on both aggregate rows.
      for (const table of ['number_aggregates', 'ip_aggregates']) {
        await db.schema.alterTable(table).addColumn('nodes', 'text', (c) => c.notNull().defaultTo('{}')).execute();
      }
      // Range lookups (docs/api.md §13) find numbers by a prefix of their key's SHA-256: one
      // small row per scope and number, in the hash's order, so a prefix is one range scan.
      let hashes: CreateTableBuilder<string, string> = db.schema
        .createTable('number_hashes')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('number_hash', 'text', (c) => c.notNull())
        .addColumn('number_key', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('number_hashes_pk', ['scope', 'number_hash', 'number_key'] as never);
      if (caps.withoutRowid) hashes = hashes.modifyEnd(sql`without rowid`);
      await hashes.execute();
      // Feeds (docs/api.md §14) read each scope's rows most recently seen first, in pages.
      await db.schema.createIndex('number_aggregates_by_recency').on('number_aggregates').columns(['scope', 'last_seen', 'number_key']).execute();
      await db.schema.createIndex('ip_aggregates_by_recency').on('ip_aggregates').columns(['scope', 'last_seen', 'source_ip']).execute();

      // The rows kept so far get their nodes and hashes here, not by folding every event in
      // again: a refold would hold intake back behind its backlog and alert every number as
      // first seen once more. Nodes are counted from the events folded so far, in the scope
      // their account has now, as a rebuild counts them. Written out: this migration is history.
      const folded = await db.selectFrom('fold_state').select('through').where('name', '=', 'aggregates').executeTakeFirst();
      const scoped = sql`(select case when a.trusted = 1 then '*shared*' else e.account_id end as scope, e.*
        from events e join accounts a on a.account_id = e.account_id where e.id <= ${Number(folded?.through ?? 0)})`;
      for (const [table, key, where] of [
        ['number_aggregates', 'number_key', sql`where number_key is not null`],
        ['ip_aggregates', 'source_ip', sql``],
      ] as const) {
        await sql`update ${sql.table(table)} set nodes = n.counts from (
            select scope, k, cast(${sql.raw(caps.jsonObjectAgg)}(name, n) as text) as counts from (
              select scope, k, name, n, row_number() over (partition by scope, k order by n desc, name) as place
              from (select scope, ${sql.ref(key)} as k, created_by_node_id as name, count(*) as n from ${scoped} s ${where} group by scope, ${sql.ref(key)}, created_by_node_id) c
            ) ranked where place <= 32 group by scope, k
          ) n where n.scope = ${sql.table(table)}.scope and n.k = ${sql.table(table)}.${sql.ref(key)}`.execute(db);
      }
      let after: { scope: string; number_key: string } | undefined;
      for (;;) {
        let page = db.selectFrom('number_aggregates').select(['scope', 'number_key']).orderBy('scope').orderBy('number_key').limit(10_000);
        if (after) {
          const { scope, number_key } = after;
          page = page.where((eb) => eb.or([eb('scope', '>', scope), eb.and([eb('scope', '=', scope), eb('number_key', '>', number_key)])]));
        }
        const rows = (await page.execute()) as Array<{ scope: string; number_key: string }>;
        for (let i = 0; i < rows.length; i += 500) {
          const values = rows.slice(i, i + 500).map((r) => ({ ...r, number_hash: createHash('sha256').update(r.number_key, 'utf8').digest('hex') }));
          await db.insertInto('number_hashes').values(values).execute();
        }
        if (rows.length < 10_000) break;
        after = rows.at(-1);
      }
    },
  };
}

import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 024_shared_changes_log. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // The TAXII publisher read the shared rows the fold changed through an index on changed_at
      // (migrations 019, 020). Every change of a row moved its entry: a delete where its old
      // instant was, on a page of its own on a store in use, and an insert at the end. That was a
      // quarter of a fold step's bytes at a million events (docs/performance.md, "The fold at
      // scale"). Its place is taken by a log the fold appends to, one entry per changed row and
      // step, at the end only; the publisher reads it and then the rows its entries name, skipping
      // entries a row has since moved past, and deletes what it has read past.
      let log = db.schema
        .createTable('shared_changes')
        .addColumn('aggregates', 'text', (c) => c.notNull())
        .addColumn('changed', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('shared_changes_pk', ['aggregates', 'changed', 'key'] as never);
      if (caps.withoutRowid) log = log.modifyEnd(sql`without rowid`);
      await log.execute();
      const positions = await db.selectFrom('taxii_publication').select(['collection', 'changed_through', 'first_pass_through']).execute();
      for (const [table, key, collection] of [
        ['number_aggregates', 'number_key', 'phone-numbers'],
        ['ip_aggregates', 'source_ip', 'ip-addresses'],
      ] as const) {
        // The publisher reads changes from a little before its position (two seconds, for other
        // instances' clocks); before it has one, from the latest change when its first pass
        // begins. So the log starts a minute before the position, or at the latest change.
        const state = positions.find((p) => p.collection === collection);
        const position = (state?.changed_through ?? state?.first_pass_through) as string | null | undefined;
        const from = position
          ? sql`${new Date(Date.parse(position) - 60_000).toISOString()}`
          : sql`(select max(changed_at) from ${sql.table(table)} where scope = '*shared*')`;
        await sql`insert into shared_changes (aggregates, changed, key)
          select cast(${table} as text), changed_at, ${sql.ref(key)} from ${sql.table(table)}
          where scope = '*shared*' and changed_at >= ${from}`.execute(db);
        await sql`drop index ${sql.id(`${table}_shared_changes`)}`.execute(db);
      }
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 018_aggregate_versions. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // When each aggregate row was first folded (a published STIX object's `created`, which
      // must never change) and when the fold last changed it (its `modified`). NULL on rows
      // folded before this migration: readers fall back to first_seen and last_seen, which is
      // what those rows were published with, and the next fold that changes a row fills both.
      // No backfill: rewriting every aggregate row of a large store to fill them would cost
      // more than the fallback.
      for (const table of ['number_aggregates', 'ip_aggregates']) {
        await db.schema.alterTable(table).addColumn('published_at', 'text').execute();
        await db.schema.alterTable(table).addColumn('changed_at', 'text').execute();
      }
    },
  };
}

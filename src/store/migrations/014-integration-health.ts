import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 014_integration_health. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // An integration whose receiver failed every attempt for a day is disabled (docs/api.md
      // §12), with why, until its owner enables it again; the owner may disable one too.
      // A webhook's secret, when rotated, keeps signing beside the new one until
      // previous_secret_until (sealed like the secret). min_score: alerts that carry a score are
      // sent only at or above it; 20, the default, lets a call attempt through and not one scan.
      await db.schema.alterTable('integrations').addColumn('disabled_at', 'text').execute();
      await db.schema.alterTable('integrations').addColumn('disabled_reason', 'text').execute();
      await db.schema.alterTable('integrations').addColumn('previous_secret', 'text').execute();
      await db.schema.alterTable('integrations').addColumn('previous_secret_until', 'text').execute();
      await db.schema.alterTable('integrations').addColumn('min_score', 'integer', (c) => c.notNull().defaultTo(20)).execute();
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 015_session_held_view. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // What a dashboard form's redirect shows once (a new client secret, a webhook's secret, a
      // notice): kept with the session, sealed with the key secret, cleared by the one view.
      await db.schema.alterTable('user_sessions').addColumn('held_view', 'text').execute();
      await db.schema.alterTable('user_sessions').addColumn('held_at', 'text').execute();
    },
  };
}

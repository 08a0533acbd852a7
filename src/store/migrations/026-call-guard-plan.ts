import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 026_call_guard_plan. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // A plan sized for a call guard (docs/call-guard.md): two lookups a call at up to 500
      // calls a second, where service_provider's 25 a second covers about 12. An operator's own
      // plan of the same name is left as it is.
      await db
        .insertInto('plans')
        .values({
          name: 'call_guard',
          may_submit: 0,
          lookups_limit: 1000,
          lookups_window: 1,
          submissions_limit: null,
          submissions_window: null,
          max_clients: null,
          event_reads_limit: 60,
          event_reads_window: 60,
        })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 008_event_read_limits. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Reads of one's own events get an allowance of their own (docs/api.md §9): a page can
      // be 1,000 events of up to 128 KiB, so unmetered reads were the cheapest way to load the
      // server. Existing plans get what their namesakes among the defaults have, others 3,600
      // an hour; a plan's lookups allowance says nothing about how heavy a page of events is.
      await db.schema.alterTable('plans').addColumn('event_reads_limit', 'integer', (c) => c.notNull().defaultTo(3600)).execute();
      await db.schema.alterTable('plans').addColumn('event_reads_window', 'integer', (c) => c.notNull().defaultTo(3600)).execute();
      const defaults: Record<string, { limit: number; windowSeconds: number }> = {
        tester: { limit: 60, windowSeconds: 3600 },
        contributor: { limit: 3600, windowSeconds: 3600 },
        business: { limit: 60, windowSeconds: 60 },
        service_provider: { limit: 60, windowSeconds: 60 },
      };
      for (const [name, window] of Object.entries(defaults)) {
        await db
          .updateTable('plans')
          .set({ event_reads_limit: window.limit, event_reads_window: window.windowSeconds })
          .where('name', '=', name)
          .execute();
      }
    },
  };
}

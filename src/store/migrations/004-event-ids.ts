import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 004_event_ids. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // Every (account, uuid) ever stored, with its content hash: the one place intake asks
      // "new, replay or conflict?", unpartitioned so it holds across all months.
      await db.schema
        .createTable('event_ids')
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('event_uuid', 'text', (c) => c.notNull())
        .addColumn('content_hash', 'text', (c) => c.notNull())
        .addColumn('event_time', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('event_ids_pk', ['account_id', 'event_uuid'])
        .execute();
      await db.schema.createIndex('event_ids_by_time').on('event_ids').column('event_time').execute();
      await sql`insert into event_ids (account_id, event_uuid, content_hash, event_time)
                select account_id, event_uuid, content_hash, event_time from events`.execute(db);
      if (caps.partitionedEvents) {
        await db.schema.createIndex('events_by_uuid').on('events').columns(['account_id', 'event_uuid']).execute();
      }
    },
  };
}

import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 028_allowlists. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // One table for every allowlist: an account's (owner = its account id) and the operator's
      // (owner = 'operator'; account ids are UUIDs, so the two never meet). `value` is the
      // normalised form lookups match on (a number key, a canonical address or range), so one
      // number or address written two ways is one entry.
      await db.schema
        .createTable('allowlist_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('note', 'text')
        .addColumn('added_by', 'text', (c) => c.notNull())
        .addColumn('added_at', 'text', (c) => c.notNull())
        .execute();
      // The same entry twice is one: the unique key makes adding it again idempotent, and serves
      // the first-seen alerts' test of a number against the account's list.
      await db.schema.createIndex('allowlist_entries_value').unique().on('allowlist_entries').columns(['owner', 'kind', 'value']).execute();
      // Servers keep allowlists in memory: on SQLite another process (the operator CLI, another
      // worker) learns of a change from migration 021's counter, as it does of access changes.
      if (!caps.accessCounter) return;
      for (const event of ['insert', 'update', 'delete']) {
        await sql`create trigger ${sql.id(`allowlist_entries_${event}_access`)} after ${sql.raw(event)} on allowlist_entries
          begin update access_version set version = version + 1 where id = 1; end`.execute(db);
      }
    },
  };
}

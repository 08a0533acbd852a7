import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 029_value_reports. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // False-positive reports (docs/api.md §17): one row per report, pending until the operator
      // decides. `kind` is `number` (value: a number key) or `ip` (a canonical address).
      await db.schema
        .createTable('value_reports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('note', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('decided_at', 'text')
        .addColumn('decision_note', 'text')
        .execute();
      // One pending report per account and value: a repeated submission answers the one there.
      await sql`create unique index value_reports_pending on value_reports (account_id, kind, value) where state = 'pending'`.execute(db);
      // An account's list, newest first; the operator's queue by state, oldest first.
      await db.schema.createIndex('value_reports_by_account').on('value_reports').columns(['account_id', 'created_at']).execute();
      await db.schema.createIndex('value_reports_by_state').on('value_reports').columns(['state', 'created_at']).execute();
      // On SQLite, servers learn of another process's commits to the tables they keep in memory
      // from migration 021's counter: a decision by the operator CLI moves it too, so the
      // accepted reports a server keeps are read again at once. PostgreSQL servers hear of it
      // by LISTEN/NOTIFY instead.
      if (!caps.accessCounter) return;
      await sql`create trigger value_reports_update_access after update of state on value_reports
        begin update access_version set version = version + 1 where id = 1; end`.execute(db);
    },
  };
}

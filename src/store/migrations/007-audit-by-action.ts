import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 007_audit_by_action. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The failure-row cap (src/store/maintenance/audit-retention.ts) finds the newest rows of a few
      // actions: by this index, in the rows it keeps, not by scanning every row of the log.
      await db.schema.createIndex('audit_by_action').ifNotExists().on('audit_log').columns(['action', 'id']).execute();
    },
  };
}

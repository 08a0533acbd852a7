import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 020_taxii_changes_in_key_order. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The TAXII publisher reads the shared rows the fold changed in (changed_at, key) order, a
      // page at a time. Migration 019's index held changed_at alone, so each page sorted every row
      // sharing a changed_at: a rebuild stamps all rows with one instant, and a page of 500 then
      // read and sorted all of them (a soak's store: 199,000 address rows per page, the server's
      // thread held for most of its time). With the key in the index, a page reads its own rows.
      for (const [table, key] of [
        ['number_aggregates', 'number_key'],
        ['ip_aggregates', 'source_ip'],
      ] as const) {
        await sql`drop index ${sql.id(`${table}_shared_changes`)}`.execute(db);
        await sql`create index ${sql.id(`${table}_shared_changes`)} on ${sql.table(table)} (changed_at, ${sql.id(key)}) where scope = '*shared*'`.execute(db);
      }
    },
  };
}

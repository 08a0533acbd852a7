import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 022_shared_pairs_by_number. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The shared data set keeps its (number, address) pairs by number alone from now on: lookups
      // look its members up in number_sources, and walk only accounts' own sets by address. Its
      // rows here would be written by nothing and read by nothing. On a large store this removes
      // about as many rows as the shared scope has pairs; the space is reused, not returned
      // (docs/operations.md).
      await sql`delete from ip_numbers where scope = '*shared*'`.execute(db);
    },
  };
}

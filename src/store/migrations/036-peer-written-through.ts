import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 036_peer_written_through. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Where the last written page of a collection ended (its X-TAXII-Date-Added-Last, as the
      // peer wrote it), kept with the page: when the peer no longer knows the `next` kept beside
      // it, the listing continues from there rather than from its start.
      await db.schema.alterTable('peer_positions').addColumn('written_through', 'text').execute();
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 034_taxii_peer_position. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The numbers' and addresses' collections pass on what peers said, where the operator lets
      // it be (docs/federation.md): where each collection's publisher stands in the peers' rows.
      // `peers_seq`, the `peer_indicators.seq` it has read through (as decimal text); `peers_signature`,
      // the peers' settings it last applied; `peers_checked`, the instant through which ends
      // (`valid_until`) of their indicators have been applied.
      for (const column of ['peers_seq', 'peers_signature', 'peers_checked']) {
        await db.schema.alterTable('taxii_publication').addColumn(column, 'text').execute();
      }
    },
  };
}

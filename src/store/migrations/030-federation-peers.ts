import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 030_federation_peers. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // Peers (docs/federation.md): other TAXII 2.1 servers whose indicators this one reads.
      // `credential` is the Basic password or the bearer token, sealed with the key secret
      // (src/domain/accounts/key-sealing.ts), never stored in the clear.
      await db.schema
        .createTable('peers')
        .addColumn('peer_id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('api_root', 'text', (c) => c.notNull())
        // JSON array of the collection ids to read.
        .addColumn('collections', 'text', (c) => c.notNull())
        // 'none' | 'basic' | 'bearer'
        .addColumn('auth', 'text', (c) => c.notNull())
        .addColumn('username', 'text')
        .addColumn('credential', 'text')
        // 0 to 1: how far this server trusts what the peer says (docs/scoring.md, "Peers").
        .addColumn('trust', 'real', (c) => c.notNull())
        .addColumn('poll_seconds', 'integer', (c) => c.notNull())
        // 1: what the peer says may be published again (feeds, TAXII, DNS), TLP permitting.
        .addColumn('republish', 'integer', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        // The poller's lease: one instance polls a peer at a time.
        .addColumn('holder', 'text')
        .addColumn('lease_until', 'text')
        // No poll before this instant (Retry-After, back-off after errors).
        .addColumn('next_poll_at', 'text')
        .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
        // Status (docs/federation.md, "Status").
        .addColumn('last_success_at', 'text')
        .addColumn('last_error', 'text')
        .addColumn('last_error_at', 'text')
        .addColumn('objects_read', caps.counterType, (c) => c.notNull().defaultTo(0))
        .addColumn('objects_accepted', caps.counterType, (c) => c.notNull().defaultTo(0))
        .addColumn('objects_skipped', caps.counterType, (c) => c.notNull().defaultTo(0))
        .addColumn('objects_refused', caps.counterType, (c) => c.notNull().defaultTo(0))
        .execute();
      // Where reading each collection of a peer stands: the `added_after` to send next (the last
      // page's X-TAXII-Date-Added-Last, or its last object's date_added), and a `next` when a
      // poll stopped between pages.
      await db.schema
        .createTable('peer_positions')
        .addColumn('peer_id', 'text', (c) => c.notNull())
        .addColumn('collection_id', 'text', (c) => c.notNull())
        .addColumn('added_after', 'text')
        .addColumn('next_page', 'text')
        .addPrimaryKeyConstraint('peer_positions_pk', ['peer_id', 'collection_id'] as never)
        .execute();
      // What the peers said: the latest version of each indicator this server understood, one
      // row per (peer, STIX id). `kind` is `number` (value: a number key, docs/api.md §7) or
      // `ip` (a canonical address). `seq` grows with every write, across all peers, so that each
      // server keeps the table in memory and reads only the rows written since its last read.
      await db.schema
        .createTable('peer_indicators')
        .addColumn('peer_id', 'text', (c) => c.notNull())
        .addColumn('object_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        // 0–100, STIX's `confidence`.
        .addColumn('confidence', 'integer', (c) => c.notNull())
        // STIX's `valid_from` (for our own indicators, the first sighting) and `modified`.
        .addColumn('valid_from', 'text', (c) => c.notNull())
        .addColumn('modified', 'text', (c) => c.notNull())
        .addColumn('valid_until', 'text')
        .addColumn('revoked', 'integer', (c) => c.notNull())
        // The TLP marking, if any: 'clear' | 'green' | 'amber' | 'amber+strict' | 'red'.
        .addColumn('tlp', 'text')
        .addColumn('seq', caps.counterType, (c) => c.notNull())
        .addPrimaryKeyConstraint('peer_indicators_pk', ['peer_id', 'object_id'] as never)
        .execute();
      await db.schema.createIndex('peer_indicators_by_value').on('peer_indicators').columns(['kind', 'value']).execute();
      await db.schema.createIndex('peer_indicators_by_seq').on('peer_indicators').columns(['seq']).execute();
    },
  };
}

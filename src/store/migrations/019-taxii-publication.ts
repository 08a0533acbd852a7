import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import type { MigrationCapabilities } from './capabilities.ts';

/** Migration 019_taxii_publication. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(caps: MigrationCapabilities): Migration {
  return {
    async up(db: Kysely<any>) {
      // The TAXII collections (docs/taxii.md) serve every version of an indicator, each with the
      // instant it was added: versions are published once and kept, not computed per request.
      // One row per collection and value: the object's present state, what the publisher
      // compares a new reading against (fingerprint), and how many times it was revoked
      // (generation: a revoked STIX object never gets another version, so a value that scores
      // again is a new object).
      await db.schema
        .createTable('taxii_objects')
        .addColumn('collection', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('generation', 'integer', (c) => c.notNull())
        .addColumn('object_id', 'text', (c) => c.notNull())
        .addColumn('created', 'text', (c) => c.notNull())
        .addColumn('modified', 'text', (c) => c.notNull())
        .addColumn('revoked', 'integer', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('taxii_objects_pk', ['collection', 'value'])
        .execute();
      // Every version as served. added_ms (milliseconds since the epoch) is the TAXII
      // date_added: unique and increasing in commit order, so paging by it misses nothing, and
      // whole milliseconds, so a client that keeps it at that precision (OpenCTI) loses nothing.
      await db.schema
        .createTable('taxii_versions')
        .addColumn('added_ms', caps.counterType, (c) => c.primaryKey())
        .addColumn('collection', 'text', (c) => c.notNull())
        .addColumn('object_id', 'text', (c) => c.notNull())
        .addColumn('modified', 'text', (c) => c.notNull())
        .addColumn('latest', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('taxii_versions_by_collection').on('taxii_versions').columns(['collection', 'added_ms']).execute();
      await db.schema.createIndex('taxii_versions_by_object').on('taxii_versions').columns(['collection', 'object_id', 'added_ms']).execute();
      // Where each collection's publisher stands: the fold's position and rebuild count when it
      // last read its changes (fold_seen), the latest change it read (changed_through), the last
      // hour whose decay it swept, and which process holds the publisher's lease.
      await db.schema
        .createTable('taxii_publication')
        .addColumn('collection', 'text', (c) => c.primaryKey())
        .addColumn('fold_seen', 'text')
        .addColumn('changed_through', 'text')
        .addColumn('swept_hour', 'text')
        .addColumn('holder', 'text')
        .addColumn('lease_until', 'text')
        .execute();
      // The publisher reads the shared data set's rows the fold changed since it last looked.
      // Partial: contributors' rows, which no collection serves, pay nothing for it.
      for (const table of ['number_aggregates', 'ip_aggregates']) {
        await sql`create index ${sql.id(`${table}_shared_changes`)} on ${sql.table(table)} (changed_at) where scope = '*shared*'`.execute(db);
      }
    },
  };
}

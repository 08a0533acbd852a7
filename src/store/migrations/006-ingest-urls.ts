import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 006_ingest_urls. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Node ingest URLs (docs/api.md §11). Revocation keeps the row (revoked_at) rather than
      // deleting it: the owner's list shows what was revoked and when, and a node still
      // posting to a revoked URL is audited against its account, though answered as unknown.
      await db.schema
        .createTable('ingest_urls')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      // Every request finds its URL by the secret's hash.
      await db.schema.createIndex('ingest_urls_by_secret').unique().on('ingest_urls').column('secret_hash').execute();
      await db.schema.createIndex('ingest_urls_by_account').on('ingest_urls').columns(['account_id', 'created_at']).execute();
    },
  };
}

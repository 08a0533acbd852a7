import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 016_node_names. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // The names an account gives its honeypot nodes (created_by_node_id), shown instead of the
      // UUID on its pages; one per node and account, kept apart from the events they describe.
      await db.schema
        .createTable('node_names')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('named_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('node_names_pk', ['account_id', 'node_id'])
        .execute();
    },
  };
}

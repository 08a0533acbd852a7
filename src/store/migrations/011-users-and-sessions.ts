import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 011_users_and_sessions. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Dashboard users (docs/dashboard.md). Operators have no account, hence a nullable
      // account_id; emails are stored lower-cased, so a unique index makes them unique.
      await db.schema
        .createTable('users')
        .addColumn('user_id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.references('accounts.account_id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text')
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_by_email').unique().on('users').column('email').execute();
      await db.schema.createIndex('users_by_account').on('users').columns(['account_id', 'created_at']).execute();
      // One-time links to set a password: only the token's hash is kept; a used one keeps its row.
      await db.schema
        .createTable('user_invitations')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
        .addColumn('purpose', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema.createIndex('user_invitations_by_user').on('user_invitations').column('user_id').execute();
      // Sessions by the hash of their id; ending all of a user's sessions goes by user_id.
      await db.schema
        .createTable('user_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_seen_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('user_sessions_by_user').on('user_sessions').column('user_id').execute();
      // The dashboard shows when each client last got a token (to the minute).
      await db.schema.alterTable('clients').addColumn('last_used_at', 'text').execute();
    },
  };
}

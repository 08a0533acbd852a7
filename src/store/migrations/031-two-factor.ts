import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 031_two_factor. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // A user's TOTP enrolment (docs/dashboard.md, "Two-factor sign-in"): the secret sealed with
      // the key secret, never in the clear; enrolled_at NULL while the first code is awaited.
      // last_step is the RFC 6238 time step of the last code accepted: none at or before it is
      // accepted again, so a code seen over a shoulder or in a proxy's log is spent.
      await db.schema
        .createTable('user_two_factor')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.user_id'))
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('enrolled_at', 'text')
        .addColumn('last_step', 'bigint')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // Single-use recovery codes, only their hashes; a spent one keeps its row until replaced.
      await db.schema
        .createTable('user_recovery_codes')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .addPrimaryKeyConstraint('user_recovery_codes_pk', ['user_id', 'code_hash'] as never)
        .execute();
      // A password accepted and a second step awaited: the browser holds a random token, the store its hash.
      await db.schema
        .createTable('pending_sign_ins')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.user_id'))
        .addColumn('next', 'text', (c) => c.notNull())
        // How the first factor was proved (password, oidc): the audit row of the finished sign-in says it.
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pending_sign_ins_by_user').on('pending_sign_ins').column('user_id').execute();
      // Accounts whose owners require two-factor sign-in of every user: a row while required.
      await db.schema
        .createTable('account_two_factor_requirements')
        .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.account_id'))
        .addColumn('required_at', 'text', (c) => c.notNull())
        .addColumn('required_by', 'text', (c) => c.notNull())
        .execute();
    },
  };
}

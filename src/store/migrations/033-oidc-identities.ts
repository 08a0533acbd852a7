import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 033_oidc_identities. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Single sign-on (docs/operations.md, "Single sign-on"): which person at which OpenID
      // provider is which user, linked at the first sign-in by a verified email address and
      // matched by (issuer, subject) from then on, whatever the address becomes.
      await db.schema
        .createTable('oidc_identities')
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('oidc_identities_pk', ['issuer', 'subject'] as never)
        .execute();
      await db.schema.createIndex('oidc_identities_by_user').on('oidc_identities').column('user_id').execute();
      // Sign-in attempts on their way through the provider: kept in the store, not in one
      // process, so that the instance answering the callback need not be the one that sent the
      // browser away. Keyed by the SHA-256 of `state`; each row is taken (deleted) once.
      await db.schema
        .createTable('oidc_attempts')
        .addColumn('state_hash', 'text', (c) => c.primaryKey())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('code_verifier', 'text', (c) => c.notNull())
        // The same-site path to open after signing in.
        .addColumn('next_path', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('oidc_attempts_by_expiry').on('oidc_attempts').column('expires_at').execute();
    },
  };
}

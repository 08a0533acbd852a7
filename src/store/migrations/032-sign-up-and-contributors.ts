import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 032_sign_up_and_contributors. Frozen: it imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Open sign-up (docs/dashboard.md, "Sign-up"): what a person asked for, kept until they
      // follow the mailed link. The link's token is stored only as its SHA-256, the password
      // only as its scrypt hash; nothing exists in `accounts` or `users` before the link is used.
      await db.schema
        .createTable('sign_ups')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('account_name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('ip', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema.createIndex('sign_ups_by_expiry').on('sign_ups').column('expires_at').execute();
      // Requests for the contributor plan: open, then approved or declined (with a reason).
      await db.schema
        .createTable('contributor_requests')
        .addColumn('request_id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('honeypots', 'text', (c) => c.notNull())
        // 'open' | 'approved' | 'declined'
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('decided_at', 'text')
        .addColumn('decided_by', 'text')
        .execute();
      // One open request per account, held by the store so two at once cannot both be open.
      await sql`create unique index contributor_requests_one_open on contributor_requests (account_id) where status = 'open'`.execute(db);
      await db.schema.createIndex('contributor_requests_by_account').on('contributor_requests').columns(['account_id', 'created_at']).execute();
      // The contributors' board: an account is on it only with an alias its owner chose.
      // `alias_key` is the alias folded to lower case: `Acme` and `acme` are one alias.
      await db.schema
        .createTable('board_aliases')
        .addColumn('account_id', 'text', (c) => c.primaryKey())
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('alias_key', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // The board counts an account's events and distinct numbers over 30 days: with the number
      // in the index, both come from the index alone, one range per account. `if not exists`: a
      // store opened between migrations may have had it built by the events' index upkeep.
      await db.schema.createIndex('events_by_account_time_number').ifNotExists().on('events').columns(['account_id', 'event_time', 'number_key']).execute();
    },
  };
}

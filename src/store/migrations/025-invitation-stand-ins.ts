import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 025_invitation_stand_ins. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // An owner's invitation of an address that already belongs to a user elsewhere: nothing
      // is given to anyone, but the account's list of users shows it as invited, exactly as it
      // shows an invitation of an unknown address, so the list tells no owner who has an account.
      // The same columns as `users` where the page reads them; never signed in with.
      await db.schema
        .createTable('invitation_stand_ins')
        .addColumn('user_id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.account_id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('invitation_stand_ins_account_email', ['account_id', 'email'])
        .execute();
    },
  };
}

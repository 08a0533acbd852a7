import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 035_account_closing. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // An account being closed is marked first, in the transaction that refuses its tokens and
      // ends its sessions, and erased afterwards in batches: the mark is what a restart or the
      // next maintenance pass finds to finish, and what keeps an operator from enabling it again.
      await db.schema.alterTable('accounts').addColumn('closing_at', 'text').execute();
      // The rows erased so far, per table (JSON), counted in each batch's transaction, so the
      // closing's audit entry tells them all however many passes it took.
      await db.schema.alterTable('accounts').addColumn('closing_counts', 'text').execute();
    },
  };
}

import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 017_client_last_use. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Where a client's last token was asked for from (last_used_at, migration 011, says when),
      // and when and from where it last called the API: the owner's "last used", written by
      // each instance every 30 seconds or so from what it noted in memory, never per request.
      await db.schema.alterTable('clients').addColumn('last_token_address', 'text').execute();
      await db.schema.alterTable('clients').addColumn('last_call_at', 'text').execute();
      await db.schema.alterTable('clients').addColumn('last_call_address', 'text').execute();
    },
  };
}

import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The cursor key's length when this migration was released: 256 bits for AES-256-GCM. */
const CURSOR_KEY_BYTES = 32;

/** Migration 005_server_secrets. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // Secrets every instance must share, made once, here. Migrations run one at a time
      // (Kysely's lock on PostgreSQL), so instances starting together read one key. On
      // SQLite the lock is a no-op and DDL is not transactional: two processes may both run
      // this, so it is idempotent and the first key written is the one kept.
      await db.schema
        .createTable('server_secrets')
        .ifNotExists()
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db
        .insertInto('server_secrets')
        .values({ name: 'cursor', value: randomBytes(CURSOR_KEY_BYTES).toString('base64') })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    },
  };
}

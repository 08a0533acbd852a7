import type { Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Migration 009_signing_key_rotation. Frozen: it copies what it needs, and imports nothing of today's code. */
export function migration(): Migration {
  return {
    async up(db: Kysely<any>) {
      // One key signs: `current_key` is 1 on that row and NULL on every other, and unique, so
      // instances creating the first key together insert it if absent and exactly one wins
      // (NULLs never collide in a unique index, on SQLite or PostgreSQL). Before this, two
      // instances starting together on an empty database could each make a key of their own.
      await db.schema.alterTable('signing_keys').addColumn('current_key', 'integer').execute();
      // When a key stops verifying and leaves the JWKS; NULL while it may still sign.
      await db.schema.alterTable('signing_keys').addColumn('retires_at', 'text').execute();
      await db.schema.createIndex('signing_keys_one_current').unique().on('signing_keys').column('current_key').execute();
      const newest = await db.selectFrom('signing_keys').select('kid').orderBy('created_at', 'desc').orderBy('kid', 'desc').executeTakeFirst();
      if (!newest) return;
      // The newest key signed before, so it stays the signing key. Any older one (such a race
      // as above) may have signed a token moments ago: it verifies for the longest lifetime a
      // token may claim (31 days) and two minutes more, then retires. Written out: this
      // migration is history and must not follow later changes of that bound.
      const retiresAt = new Date(Date.now() + (31 * 86_400 + 120) * 1000).toISOString();
      await db.updateTable('signing_keys').set({ current_key: 1 }).where('kid', '=', newest.kid).execute();
      await db.updateTable('signing_keys').set({ retires_at: retiresAt }).where('kid', '<>', newest.kid).execute();
    },
  };
}

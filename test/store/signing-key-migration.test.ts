import { afterEach, describe, expect, it } from 'vitest';
import { openReadDatabase, type Database } from '../../src/store/database.ts';
import { migrateToLatest, migrateUpTo } from '../../src/store/migrate.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/** A key row as an earlier version wrote it (the content does not matter to the migration). */
const keyRow = (kid: string, createdAt: string) => ({ kid, alg: 'ES256', private_jwk: 'sealed', public_jwk: '{}', created_at: createdAt });

describe('migration 009: one current signing key', () => {
  let store: TestDatabase;
  let database: Database;
  afterEach(async () => {
    await database.close();
    await store.drop();
  });

  it('makes the newest of the keys two racing instances left current, retires the others after 31 days and two minutes, and refuses a second current key', async () => {
    store = await freshDatabase();
    // Opened without migrating, to stop at the schema before 009.
    database = openReadDatabase(store.url);
    await migrateUpTo(database.db, database.caps, '008_event_read_limits');
    const db = database.db as any;
    await db.insertInto('signing_keys').values([keyRow('older', '2026-01-01T00:00:00.000Z'), keyRow('newer', '2026-01-01T00:00:00.001Z')]).execute();

    const started = Date.now();
    await migrateToLatest(database.db, database.caps);
    const rows = await database.db.selectFrom('signing_keys').select(['kid', 'current_key', 'retires_at']).orderBy('kid').execute();
    expect(rows.map((r) => [r.kid, r.current_key])).toEqual([
      ['newer', 1],
      ['older', null],
    ]);
    expect(rows[0]!.retires_at).toBeNull();
    const retires = Date.parse(rows[1]!.retires_at!);
    expect(retires).toBeGreaterThanOrEqual(started + (31 * 86_400 + 120) * 1000);
    expect(retires).toBeLessThanOrEqual(Date.now() + (31 * 86_400 + 120) * 1000);

    await expect(db.insertInto('signing_keys').values({ ...keyRow('third', '2026-01-02T00:00:00.000Z'), current_key: 1 }).execute()).rejects.toThrow();
    await db.insertInto('signing_keys').values({ ...keyRow('fourth', '2026-01-02T00:00:00.000Z'), current_key: null }).execute();
  });
});

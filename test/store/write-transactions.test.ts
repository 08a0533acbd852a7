import SQLiteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { storeFilePath } from '../../src/store/store-files.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * A transaction on SQLite that reads, then writes, while another connection commits between the
 * two: begun deferred, its write failed at once with SQLITE_BUSY (its snapshot was stale), which
 * the store reports as unavailable, a 503. Begun immediate, it holds the write lock from its
 * first statement, so the other connection waits its turn instead.
 */
describe.skipIf(TEST_STORE !== 'sqlite')('a transaction that reads before it writes, on SQLite', () => {
  let store: TestDatabase;
  let database: Database;
  let other: SQLiteDatabase.Database;

  beforeAll(async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    await database.db.insertInto('fold_state').values({ name: 'a test row', through: 0 }).execute();
    // No busy timeout: this test runs on one thread, so a write here that had to wait would
    // wait for a transaction that cannot go on until it returns.
    other = new SQLiteDatabase(storeFilePath(store.url)!, { timeout: 0 });
  });
  afterAll(async () => {
    other?.close();
    await database?.close();
    await store?.drop();
  });

  it('commits its write, and another connection that wrote in between waits for it', async () => {
    let othersWrite: string | undefined;
    await database.db.transaction().execute(async (trx) => {
      const { through } = await trx.selectFrom('fold_state').select('through').where('name', '=', 'a test row').executeTakeFirstOrThrow();
      try {
        other.prepare("update fold_state set through = 100 where name = 'a test row'").run();
        othersWrite = 'committed';
      } catch (err) {
        othersWrite = (err as { code?: string }).code;
      }
      await trx.updateTable('fold_state').set({ through: Number(through) + 1 }).where('name', '=', 'a test row').execute();
    });
    expect(othersWrite).toBe('SQLITE_BUSY');
    const row = await database.db.selectFrom('fold_state').select('through').where('name', '=', 'a test row').executeTakeFirstOrThrow();
    expect(Number(row.through)).toBe(1);
  });
});

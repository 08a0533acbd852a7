import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.ts';
import { freshDatabase, TEST_STORE } from '../support/test-database.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * PostgreSQL ends a connection (a restart, an administrator) while the store holds it between two
 * statements of a transaction. Before the pool's clients had an error listener, the server's
 * message arrived with no query to fail and was thrown: the process went down ("shutting down
 * after an error"), as an outage test saw now and then when PostgreSQL stopped.
 */
describe.skipIf(TEST_STORE !== 'postgres')('a PostgreSQL store losing a connection inside a transaction', () => {
  it('fails that transaction, not the process, and serves the next statement on another connection', async () => {
    const store = await freshDatabase();
    const database = await openDatabase(store.url);
    const admin = new pg.Client({ connectionString: store.url });
    await admin.connect();
    try {
      const attempt = database.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
        // The server's "terminating connection" arrives now, while no statement runs.
        await sleep(200);
        await sql`select 1`.execute(trx);
      });
      await expect(attempt).rejects.toThrow();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await database.close();
      await store.drop();
    }
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * A PostgreSQL store that answers but refuses writes (SQLSTATE 25006): a primary demoted to a
 * standby while a proxy or a cached address still leads to it, or one restarted in place that
 * came back read-only for a moment. Made here with the server's own setting, every new session
 * read-only, and every open session ended so that the pool connects again.
 */
describe.skipIf(TEST_STORE !== 'postgres')('a PostgreSQL store that turned read-only', () => {
  let database: TestDatabase;
  let h: Harness;
  let who: TestAccount;
  let admin: pg.Client;

  /** Every session on the store's database but the admin's own ends; the pool's next ones get the new setting. */
  const readOnly = async (on: boolean) => {
    const name = new URL(database.url).pathname.slice(1);
    await admin.query(on ? `alter database ${name} set default_transaction_read_only = on` : `alter database ${name} reset default_transaction_read_only`);
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  };

  beforeAll(async () => {
    database = await freshDatabase();
    h = await startHarness({ DATABASE_URL: database.url });
    who = await h.account();
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await h?.close();
    await database?.drop();
  });

  it('answers intake 503 with Retry-After, never 500, stores nothing, and writes again once the store does', async () => {
    expect((await postEvent(who, sampleEvent())).status).toBe(201);
    await readOnly(true);
    const refused = Array.from({ length: 5 }, () => sampleEvent());
    for (const event of refused) {
      const res = await postEvent(who, event);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await res.json()) as { error: string }).error).toBe('unavailable');
    }
    const { rows } = await admin.query<{ n: string }>('select count(*) as n from events where event_uuid = any($1::text[])', [refused.map((e) => e.event_uuid)]);
    expect(Number(rows[0]!.n)).toBe(0);

    await readOnly(false);
    // The same events sent again, as a node does after a 503: each stored once.
    for (const event of refused) {
      await eventually('the event to be stored once the store takes writes again', async () => (await postEvent(who, event)).status, (status) => status === 201 || status === 200);
    }
    const after = await admin.query<{ n: string }>('select count(*) as n from events where event_uuid = any($1::text[])', [refused.map((e) => e.event_uuid)]);
    expect(Number(after.rows[0]!.n)).toBe(refused.length);
  });
});

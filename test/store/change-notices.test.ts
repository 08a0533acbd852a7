import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTENER_APPLICATION_NAME, PostgresChangeNotices } from '../../src/store/change-notices.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => Promise<boolean> | boolean, limitMs = 3000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > limitMs) throw new Error('timed out');
    await sleep(10);
  }
}

/** PostgreSQL's LISTEN/NOTIFY as the carrier of access-change notices (src/store/change-notices.ts). */
describe.skipIf(TEST_STORE !== 'postgres')('access-change notices through PostgreSQL', () => {
  let store: TestDatabase;
  let pool: pg.Pool;
  let admin: pg.Client;
  beforeAll(async () => {
    store = await freshDatabase();
    pool = new pg.Pool({ connectionString: store.url });
    admin = new pg.Client({ connectionString: store.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await pool.end();
    await store?.drop();
  });

  const listenerPids = async () =>
    (await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and application_name = $1', [LISTENER_APPLICATION_NAME])).rows.map((r) => r.pid);

  it('delivers an announcement to every listener; a lost connection counts as a change, is made again and listens again', async () => {
    const speaker = new PostgresChangeNotices(store.url, pool);
    const listener = new PostgresChangeNotices(store.url, pool);
    let heard = 0;
    try {
      await listener.onAccessChange(() => heard++);
      speaker.announceAccessChange();
      await waitFor(() => heard === 1);

      const [pid] = await listenerPids();
      await admin.query('select pg_terminate_backend($1)', [pid]);
      // Whatever was announced meanwhile is lost: the drop itself, and the return, say "changed".
      await waitFor(async () => (await listenerPids()).some((p) => p !== pid));
      await waitFor(() => heard === 3);
      speaker.announceAccessChange();
      await waitFor(() => heard === 4);
    } finally {
      await listener.close();
      await speaker.close();
    }
    await waitFor(async () => (await listenerPids()).length === 0);
  });
});

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { StoreMaintenance } from '../../src/store/maintenance/maintenance.ts';
import { validSampleEvent } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * A request's statement on PostgreSQL fails after a query timeout, so that requests answer 503
 * quickly while the server is away; rebuilds, retention, migrations and index builds take far
 * longer on a large store (a rebuild over 10 million events: minutes) and run on a connection
 * without it (Database.unhurried). Here the timeout is 300 ms, and a table the work needs stays
 * locked until the work has waited for it twice that long.
 */
/** The request connections' query timeout in this test. */
const QUERY_TIMEOUT_MS = 300;

describe.skipIf(TEST_STORE !== 'postgres')('work that takes longer than a request may', () => {
  let store: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url, { queryTimeoutMs: QUERY_TIMEOUT_MS });
  });
  afterAll(async () => {
    await database?.close();
    await store?.drop();
  });

  /** Locks a table from another connection; resolves once the lock is held, with its release. */
  async function lock(table: string): Promise<{ release(): Promise<void> }> {
    const locker = new pg.Client({ connectionString: store.url });
    await locker.connect();
    await locker.query('begin');
    await locker.query(`lock table ${table} in access exclusive mode`);
    return {
      async release() {
        await locker.query('commit');
        await locker.end();
      },
    };
  }

  /**
   * Waits until the rebuild's first statement on the locked table (it copies the rows' publication
   * times aside) has been waiting for the lock twice as long as the query timeout: past the point
   * where a request's statement gives up. Answers how long it had waited, in ms.
   */
  async function rebuildWaitedPastTimeout(): Promise<number> {
    // A connection of its own: a request connection whose statement timed out is still waiting on the lock.
    const watcher = new pg.Client({ connectionString: store.url });
    await watcher.connect();
    const waited = async () => {
      const { rows } = await watcher.query<{ ms: number }>(`select coalesce(max(extract(epoch from now() - query_start) * 1000), 0)::float8 as ms
        from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like 'create temporary table%'`);
      return Number(rows[0]?.ms ?? 0);
    };
    try {
      return await eventually('the rebuild to wait on the lock past the query timeout', waited, (ms) => ms >= 2 * QUERY_TIMEOUT_MS);
    } finally {
      await watcher.end();
    }
  }

  it('fails a request’s statement at the timeout, and finishes a rebuild on its own connection', async () => {
    const locked = await lock('number_aggregates');
    await expect(database.db.selectFrom('number_aggregates').selectAll().execute()).rejects.toThrow(/timeout/i);
    const rebuilt = rebuildAggregates(database.unhurried, database.caps);
    try {
      // It waited for the lock, past the timeout, and still finishes once the lock is gone.
      expect(await rebuildWaitedPastTimeout()).toBeGreaterThanOrEqual(2 * QUERY_TIMEOUT_MS);
    } finally {
      await locked.release();
    }
    await rebuilt;
  });

  it('applies retention, and the rebuild after it, past the timeout', async () => {
    const accountId = randomUUID();
    await database.db.insertInto('accounts').values({ account_id: accountId, name: 'old events', plan: 'contributor', trusted: 0, disabled: 0, created_at: new Date().toISOString() }).execute();
    const old = validSampleEvent({ event_timestamp: new Date(Date.now() - 400 * 86_400_000).toISOString() });
    await new SqlEventsRepository(database.db, database.ingestWrites).ingest({ accountId, scope: accountId }, [old]);
    const locked = await lock('number_aggregates');
    const pass = new StoreMaintenance(database, 90).runOnce(new Date());
    try {
      await rebuildWaitedPastTimeout();
    } finally {
      await locked.release();
    }
    const report = await pass;
    expect(report.eventsRemoved + report.partitionsDropped.length).toBeGreaterThan(0);
    expect(report.keysRecomputed).toEqual({ numbers: 1, addresses: 1 });
  });
});

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateHoneypotEvent } from '../../src/domain/honeypot-event.ts';
import { rebuildAggregates } from '../../src/store/aggregates-rebuild.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/events-repository.ts';
import { StoreMaintenance } from '../../src/store/maintenance.ts';
import { sampleEvent } from '../support/harness.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * A request's statement on PostgreSQL fails after a query timeout, so that requests answer 503
 * quickly while the server is away; rebuilds, retention, migrations and index builds take far
 * longer on a large store (a rebuild over 10 million events: minutes) and run on a connection
 * without it (Database.unhurried). Here the timeout is 300 ms, and a table the work needs is
 * locked for longer than that.
 */
describe.skipIf(TEST_STORE !== 'postgres')('work that takes longer than a request may', () => {
  let store: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url, { queryTimeoutMs: 300 });
  });
  afterAll(async () => {
    await database.close();
    await store.drop();
  });

  /** Locks a table from another connection for `ms`; resolves once the lock is held, with its release. */
  async function lockFor(table: string, ms: number): Promise<{ released: Promise<void> }> {
    const locker = new pg.Client({ connectionString: store.url });
    await locker.connect();
    await locker.query('begin');
    await locker.query(`lock table ${table} in access exclusive mode`);
    const released = new Promise<void>((resolve) => setTimeout(resolve, ms)).then(async () => {
      await locker.query('commit');
      await locker.end();
    });
    return { released };
  }

  it('fails a request’s statement at the timeout, and finishes a rebuild on its own connection', async () => {
    const { released } = await lockFor('number_aggregates', 1000);
    await expect(database.db.selectFrom('number_aggregates').selectAll().execute()).rejects.toThrow(/timeout/i);
    const started = Date.now();
    await rebuildAggregates(database.unhurried, database.caps);
    // It waited for the lock, past the timeout.
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    await released;
  });

  it('applies retention, and the rebuild after it, past the timeout', async () => {
    const accountId = randomUUID();
    await database.db.insertInto('accounts').values({ account_id: accountId, name: 'old events', plan: 'contributor', trusted: 0, disabled: 0, created_at: new Date().toISOString() }).execute();
    const old = validateHoneypotEvent(sampleEvent({ event_timestamp: new Date(Date.now() - 400 * 86_400_000).toISOString() }), new Date());
    if (!old.ok) throw new Error(JSON.stringify(old.errors));
    await new SqlEventsRepository(database.db, database.ingestWrites).ingest({ accountId, scope: accountId }, [old.event]);
    const { released } = await lockFor('number_aggregates', 1000);
    const report = await new StoreMaintenance(database, 90).runOnce(new Date());
    expect(report.eventsRemoved + report.partitionsDropped.length).toBeGreaterThan(0);
    expect(report.aggregatesRebuilt).toBe(true);
    await released;
  });
});

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { TEST_STORE } from '../support/test-database.ts';

/**
 * On a SQLite file, the main thread answers every request, and better-sqlite3 waits for the
 * store's one write lock by sleeping the thread: a background job writing there stops lookups
 * for as long as intake or a fold step holds the lock. The alert worker writes through the
 * writer thread instead (src/store/outbox-on-writer.ts; the TAXII publisher's writes too,
 * taxii-on-writer.ts). Here another connection holds the lock: the worker's pass, which claims
 * alerts and deliveries with an UPDATE even when none is due, must wait for it without stopping
 * the main thread, and finish once it is let go.
 */
describe.runIf(TEST_STORE === 'sqlite')('the alert worker on a SQLite file', () => {
  let h: Harness;
  let holder: Database.Database;

  beforeAll(async () => {
    h = await startHarness();
    holder = new Database(h.config.databaseUrl.slice('sqlite:'.length));
  });
  afterAll(async () => {
    if (holder.inTransaction) holder.exec('rollback');
    holder.close();
    await h.close();
  });

  it('waits for the write lock off the main thread', async () => {
    // Once first, so the writer thread is up and the pass below only waits for the lock.
    await h.services.alertWorker.tick();

    holder.exec('begin immediate');
    const settled: string[] = [];
    const pass = h.services.alertWorker.tick().finally(() => settled.push('alert worker'));
    // On the main thread's connection, the pass would sleep this thread until SQLite's busy
    // timeout gave up (5 s), and this timer would run only after the pass had failed.
    await new Promise((resolve) => setTimeout(resolve, 100));
    settled.push('main thread');
    holder.exec('commit');
    await pass;
    expect(settled).toEqual(['main thread', 'alert worker']);
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { readScopesOf } from '../../src/domain/visibility.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startPrivateCluster, type PrivateCluster } from '../support/private-postgres.ts';
import { smallDiskUnavailable } from '../support/small-disk.ts';
import { TEST_STORE } from '../support/test-database.ts';

// A cluster of the test's own, with a streaming replica, needs root (the cluster runs as the
// `postgres` user), as the disk-full test does and with the same switch.
const unavailable = TEST_STORE !== 'postgres' ? 'PostgreSQL runs only' : smallDiskUnavailable();
if (TEST_STORE === 'postgres' && unavailable && process.env.TOLLWATCH_REQUIRE_DISK_FAULTS === '1') throw new Error(`${unavailable}; TOLLWATCH_REQUIRE_DISK_FAULTS=1 makes that a failure`);

/**
 * Lookups over a read replica (DATABASE_READ_URL, docs/api.md §7): the submitting account's
 * own lookups count its events at once, as without one, and another account's see a change
 * once the replica has replayed it, never later for the memory of lookups. The replica's replay
 * is paused (pg_wal_replay_pause) to make its lag as long as the test needs. A verification
 * measured 5 of 20 own lookups finding their event at once with a replica (20 of 20 without),
 * and the memory of lookups cut from 60 s to 500 ms to bound how long a stale read was kept.
 */
describe.skipIf(unavailable)('lookups over a streaming replica', () => {
  let cluster: PrivateCluster;
  let replica: pg.Client;
  let h: Harness;
  let fleet: TestAccount;
  let watcher: TestAccount;

  const replay = async (action: 'pause' | 'resume') => void (await replica.query(`select pg_wal_replay_${action}()`));
  const lookup = async (who: TestAccount, number: string) => (await (await who.api(`/api/phone-numbers/${encodeURIComponent(number)}`)).json()) as { found: boolean; seen_count?: number };

  beforeAll(async () => {
    cluster = await startPrivateCluster();
    const admin = new pg.Client({ connectionString: cluster.adminUrl });
    await admin.connect();
    await admin.query('create database tollwatch');
    await admin.end();
    const url = (base: string) => Object.assign(new URL(base), { pathname: '/tollwatch' }).toString();
    const replicaUrl = await cluster.startReplica();
    replica = new pg.Client({ connectionString: replicaUrl });
    await replica.connect();
    h = await startHarness({ DATABASE_URL: url(cluster.adminUrl), DATABASE_READ_URL: url(replicaUrl) });
    fleet = await h.account({ trusted: true });
    watcher = await h.account();
  });
  afterAll(async () => {
    await replica?.query('select pg_wal_replay_resume()').catch(() => undefined);
    await h?.close();
    await replica?.end();
    cluster?.remove();
  });

  it('keeps the memory of lookups 60 s with a replica, as without one', () => {
    expect(h.config.lookupCacheMs).toBe(60_000);
  });

  it('counts an account’s own events in its lookups at once, while the replica has replayed none of them', async () => {
    const own = await h.account();
    await replay('pause');
    try {
      for (let i = 0; i < 20; i++) {
        const number = `+4681344${String(i).padStart(4, '0')}`;
        expect((await postEvent(own, sampleEvent({ called_number: number }))).status).toBe(201);
        expect(await lookup(own, number), number).toMatchObject({ found: true, seen_count: 1 });
        // The replica has not replayed it: another account does not see it yet.
        expect((await lookup(watcher, number)).found).toBe(false);
      }
    } finally {
      await replay('resume');
    }
  });

  it('shows another account a change once the replica has replayed it, not when the memory of an earlier read expires', async () => {
    const number = '+4681345000';
    expect((await postEvent(fleet, sampleEvent({ called_number: number, source_ip: '192.0.2.10' }))).status).toBe(201);
    await h.settled();
    await expect.poll(() => lookup(watcher, number)).toMatchObject({ found: true, seen_count: 1 });
    // Past the first fold's forgetting, then read once more: that answer stays kept until the
    // next fold, which must not replace it with the primary's new count.
    await expect.poll(() => h.services.replicaReads?.waiting).toBe(0);
    expect(await lookup(watcher, number)).toMatchObject({ seen_count: 1 });
    const kept = () => h.services.lookupCache.fresh('number', normalisePhoneNumber(number)!.key, readScopesOf(watcher.account))?.value;
    expect(kept()).toMatchObject({ seenCount: 1 });

    await replay('pause');
    try {
      expect((await postEvent(fleet, sampleEvent({ called_number: number, source_ip: '192.0.2.11' }))).status).toBe(201);
      await h.settled();
      // The fold dropped the kept answer, rather than work it out from the primary's rows.
      expect(kept()).toBeUndefined();
      // Read from the replica, which has not replayed the fold: the old count, now in memory.
      expect(await lookup(watcher, number)).toMatchObject({ seen_count: 1 });
      expect(await lookup(watcher, number)).toMatchObject({ seen_count: 1 });
    } finally {
      await replay('resume');
    }
    const resumed = performance.now();
    await expect.poll(async () => (await lookup(watcher, number)).seen_count, { interval: 10, timeout: 5000 }).toBe(2);
    console.log(`[replica] a change the replica replayed was seen ${Math.round(performance.now() - resumed)} ms after replay resumed`);
  });

  // Last: it leaves the replica a primary of its own.
  it('stops waiting on a replica once it is promoted, whose replay position then stands still', async () => {
    cluster.promoteReplica();
    expect((await replica.query<{ recovering: boolean }>('select pg_is_in_recovery() as recovering')).rows[0]?.recovering).toBe(false);
    expect((await postEvent(fleet, sampleEvent({ called_number: '+4681345001' }))).status).toBe(201);
    await h.settled();
    // A promoted replica reads what is written to it: nothing lags, and nothing is left waiting
    // (it was: every fold's wait added to a list polled every 10 ms, for ever).
    await expect.poll(() => h.services.replicaReads?.waiting, { timeout: 5000 }).toBe(0);
  });
});

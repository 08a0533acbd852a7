import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { AGGREGATES_FOLD, AGGREGATES_REBUILDS, foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { StoreMaintenance } from '../../src/store/maintenance/maintenance.ts';
import { ensurePartitions } from '../../src/store/maintenance/partitions.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { startHarness, validSampleEvent, type Harness } from '../support/harness.ts';
import { seededRandom } from '../support/seeded-random.ts';

const DAY = 86_400_000;
const RETENTION_DAYS = 30;

/**
 * Retention removes events and recomputes the aggregates of only the numbers and addresses they
 * counted in (removeEventsAndRecompute), instead of rebuilding every aggregate at each pass that
 * removes one. Here: events over many days in two accounts (one in the shared data set), folded
 * in part, retention passes at later and later instants; whatever the interleaving, the
 * aggregates end as a rebuild from the events kept makes them, and keys no removed event
 * counted in are not rewritten.
 */
describe('retention recomputes only the keys of the events it removes', () => {
  let h: Harness;
  let repo: SqlEventsRepository;
  let owners: Array<{ accountId: string; scope: string }>;

  beforeAll(async () => {
    h = await startHarness();
    repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
    // The steps below are the only folds: the server's own would interleave at random.
    await h.services.aggregateFolder.stop();
    const fleet = (await h.account({ trusted: true })).account.account_id;
    const loner = (await h.account()).account.account_id;
    owners = [
      { accountId: fleet, scope: SHARED_SCOPE },
      { accountId: loner, scope: loner },
    ];
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The count of rebuilds of the aggregates, which every process watches to forget what it keeps. */
  async function rebuilds(): Promise<number> {
    const row = await h.services.database.db.selectFrom('fold_state').select('through').where('name', '=', AGGREGATES_REBUILDS).executeTakeFirst();
    return Number(row?.through ?? 0);
  }

  it('ends with the aggregates a rebuild makes, whatever was folded when a pass ran', async () => {
    const store = h.services.database;
    const next = seededRandom(2811);
    const numbers = ['+441234300001', '+441234300002', '+441234300003', '+441234300004', '+441234300005'];
    const addresses = ['198.51.100.30', '198.51.100.31', '198.51.100.32', '198.51.100.33'];
    const start = Date.now() - 120 * DAY;
    // Events already stored partitions for their months, as they would have when they arrived.
    if (store.caps.partitionedEvents) for (let day = 0; day <= 130; day += 20) await ensurePartitions(store.db, new Date(start + day * DAY));
    let passes = 0;
    let passesWithBacklog = 0;
    const unfoldedEvents = async () => {
      const newest = await store.db.selectFrom('events').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst();
      const folded = await store.db.selectFrom('fold_state').select('through').where('name', '=', AGGREGATES_FOLD).executeTakeFirst();
      return Number(newest?.id ?? 0) - Number(folded?.through ?? 0);
    };
    for (let turn = 0; turn < 40; turn++) {
      // The store's clock moves 2 days a turn; events arrive up to 50 days late.
      const now = new Date(start + (40 + turn * 2) * DAY);
      const events = Array.from({ length: 1 + next(5) }, () =>
        validSampleEvent(
          {
            called_number: numbers[next(numbers.length)],
            source_ip: addresses[next(addresses.length)],
            sip_method: ['INVITE', 'OPTIONS', 'REGISTER'][next(3)],
            event_timestamp: new Date(now.getTime() - next(50) * DAY - next(DAY)).toISOString(),
          },
          now,
        ),
      );
      await repo.ingest(owners[next(2)]!, events);
      const action = next(4);
      if (action === 0) await foldStep(store, 1 + next(6));
      else if (action === 1) {
        const unfolded = (await unfoldedEvents()) > 0;
        const report = await new StoreMaintenance(store, RETENTION_DAYS).runOnce(now);
        if (report.keysRecomputed) passes += 1;
        if (report.keysRecomputed && unfolded) passesWithBacklog += 1;
      }
    }
    while ((await foldStep(store, 10)).more);
    const corrected = await aggregateSnapshot(store.db);
    await rebuildAggregates(store.db, store.caps);
    expect(corrected).toEqual(await aggregateSnapshot(store.db));
    // Passes that removed events did run, some with events stored and not yet folded.
    expect(passes).toBeGreaterThan(3);
    expect(passesWithBacklog).toBeGreaterThan(0);
  });

  it('leaves the rows of keys no removed event counted in as they were', async () => {
    const store = h.services.database;
    const now = new Date();
    const [fleet] = owners;
    const old = new Date(now.getTime() - 2 * RETENTION_DAYS * DAY);
    if (store.caps.partitionedEvents) await ensurePartitions(store.db, old);
    const at = (days: number) => new Date(now.getTime() - days * DAY).toISOString();
    await repo.ingest(fleet!, [
      validSampleEvent({ called_number: '+441234400001', source_ip: '198.51.100.40', event_timestamp: old.toISOString() }, now),
      validSampleEvent({ called_number: '+441234400001', source_ip: '198.51.100.41', event_timestamp: at(1) }, now),
      validSampleEvent({ called_number: '+441234400002', source_ip: '198.51.100.42', event_timestamp: at(1) }, now),
    ]);
    while ((await foldStep(store, 10)).more);
    const changedAt = async (key: string) =>
      (await store.db.selectFrom('number_aggregates').select(['changed_at', 'seen_count']).where('scope', '=', SHARED_SCOPE).where('number_key', '=', key).executeTakeFirst());
    const untouched = await changedAt('+441234400002');
    const before = await rebuilds();

    const report = await new StoreMaintenance(store, RETENTION_DAYS).runOnce(now);
    // Every event older than the cutoff left: this test's one, and what the first left behind.
    expect(report.keysRecomputed?.numbers).toBeGreaterThanOrEqual(1);
    expect(await changedAt('+441234400002')).toEqual(untouched);
    expect(Number((await changedAt('+441234400001'))?.seen_count)).toBe(1);
    expect(await store.db.selectFrom('number_sources').select('source_ip').where('number_key', '=', '+441234400001').execute()).toEqual([{ source_ip: '198.51.100.41' }]);
    expect(await store.db.selectFrom('ip_aggregates').select('source_ip').where('source_ip', '=', '198.51.100.40').execute()).toEqual([]);
    // Every process forgets what it keeps of the aggregates, as after a rebuild.
    const after = await rebuilds();
    expect(after).toBe(before + 1);

    // A pass with nothing to remove touches nothing and counts no rebuild.
    const quiet = await new StoreMaintenance(store, RETENTION_DAYS).runOnce(now);
    expect(quiet.keysRecomputed).toBeUndefined();
    expect(await rebuilds()).toBe(after);
  });
});

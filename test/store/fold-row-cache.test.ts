import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { FoldRowCache } from '../../src/store/fold/fold-row-cache.ts';
import type { AggregateTable, IngestWrites } from '../../src/store/fold/ingest-writes.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { startHarness, validSampleEvent, type Harness } from '../support/harness.ts';
import { seededRandom } from '../support/seeded-random.ts';

describe('the fold keeps the rows it wrote (fold-row-cache.ts)', () => {
  let h: Harness;
  let accountId: string;
  let repo: SqlEventsRepository;

  beforeAll(async () => {
    h = await startHarness();
    accountId = (await h.account({ trusted: true })).account.account_id;
    repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
    // The steps below are the only folds: the server's own would interleave at random.
    await h.services.aggregateFolder.stop();
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The store, with its reads of aggregate rows counted by table. */
  function countingStore() {
    const store = h.services.database;
    const reads: Record<AggregateTable, number> = { number_aggregates: 0, ip_aggregates: 0 };
    const ingestWrites: IngestWrites = Object.create(store.ingestWrites);
    ingestWrites.readAggregates = (trx, table, keys) => {
      reads[table] += keys.length;
      return store.ingestWrites.readAggregates(trx, table, keys);
    };
    return { reads, store: { db: store.db, caps: store.caps, ingestWrites } };
  }

  it('does not read back the rows its last step wrote', async () => {
    const { reads, store } = countingStore();
    const cache = new FoldRowCache();
    const owner = { accountId, scope: '*shared*' };
    await repo.ingest(owner, [validSampleEvent({ called_number: '+441234100001', source_ip: '198.51.100.1' })]);
    await foldStep(store, 100, cache);
    expect(reads).toEqual({ number_aggregates: 1, ip_aggregates: 1 });
    await repo.ingest(owner, [validSampleEvent({ called_number: '+441234100001', source_ip: '198.51.100.1' }), validSampleEvent({ called_number: '+441234100002', source_ip: '198.51.100.1' })]);
    await foldStep(store, 100, cache);
    // Only the number the first step did not write is read.
    expect(reads).toEqual({ number_aggregates: 2, ip_aggregates: 1 });
    expect(cache.size).toBe(3);
  });

  it('ends with the aggregates a rebuild makes, whatever the interleaving of two processes, rebuilds and failed steps', async () => {
    const store = h.services.database;
    const owner = { accountId, scope: '*shared*' };
    // Two processes folding one store in turns, each with its own kept rows.
    const caches = [new FoldRowCache(), new FoldRowCache()];
    const next = seededRandom(2026);
    // Few keys, so that nearly every step finds kept rows, and both processes change the same ones.
    const numbers = ['+441234200001', '+441234200002', '+441234200003'];
    const addresses = ['198.51.100.20', '198.51.100.21'];
    const failing: IngestWrites = Object.create(store.ingestWrites);
    failing.writeAggregates = async (trx, table, rows) => {
      await store.ingestWrites.writeAggregates(trx, table, rows);
      // Number rows are written (and kept aside) first: the failure rolls them back.
      if (table === 'ip_aggregates') throw new Error('the store went away');
    };
    for (let turn = 0; turn < 60; turn++) {
      const events = Array.from({ length: 1 + next(4) }, () => validSampleEvent({ called_number: numbers[next(numbers.length)], source_ip: addresses[next(addresses.length)], sip_method: ['INVITE', 'OPTIONS'][next(2)] }));
      await repo.ingest(owner, events);
      const action = next(10);
      const cache = caches[next(2)]!;
      if (action === 0) await rebuildAggregates(store.db, store.caps);
      else if (action === 1) await expect(foldStep({ ...store, ingestWrites: failing }, 1 + next(5), cache)).rejects.toThrow('the store went away');
      else await foldStep(store, 1 + next(5), cache);
    }
    for (const cache of caches) while ((await foldStep(store, 5, cache)).more);
    const folded = await aggregateSnapshot(store.db);
    await rebuildAggregates(store.db, store.caps);
    expect(folded).toEqual(await aggregateSnapshot(store.db));
  });

  it('keeps no more rows than its bound under a stream of never-repeated keys', async () => {
    const cache = new FoldRowCache(50);
    const owner = { accountId, scope: '*shared*' };
    for (let step = 0; step < 4; step++) {
      await repo.ingest(
        owner,
        Array.from({ length: 40 }, (_, i) => validSampleEvent({ called_number: `+4412343${String(step * 100 + i).padStart(5, '0')}`, source_ip: `203.0.113.${step * 40 + i}` })),
      );
      await foldStep(h.services.database, 1000, cache);
      expect(cache.size).toBeLessThanOrEqual(100);
    }
    expect(cache.size).toBe(100);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { SqlAggregateKeys } from '../../src/store/fold/aggregate-keys.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { startHarness, validSampleEvent, type Harness } from '../support/harness.ts';

/** What the known-keys filter is loaded from (src/aggregates/known-keys.ts), on the store under test. */
describe('the lookup aggregates’ keys', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('come in pages covering every key, and the count is never below the rows kept, deleted ones included', async () => {
    const fleet = (await h.account({ trusted: true })).account.account_id;
    const repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
    const numbers = Array.from({ length: 25 }, (_, i) => `+4412345${String(i).padStart(5, '0')}`);
    await repo.ingest({ accountId: fleet, scope: SHARED_SCOPE }, numbers.map((called_number, i) => validSampleEvent({ called_number, source_ip: `198.51.100.${i + 1}` })));
    await h.services.aggregateFolder.settle();
    const { database } = h.services;
    const keys = new SqlAggregateKeys(database.db, database.caps, 10);

    const pages: string[][] = [];
    for await (const page of keys.keys('number')) pages.push([...page]);
    expect(pages.length).toBeGreaterThan(2);
    expect(pages.every((page) => page.length <= 10)).toBe(true);
    expect(pages.flat()).toEqual(expect.arrayContaining(numbers));
    const rows = async (table: 'number_aggregates' | 'ip_aggregates') => Number((await database.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    expect(pages.flat()).toHaveLength(await rows('number_aggregates'));
    expect(await keys.count('number')).toBeGreaterThanOrEqual(await rows('number_aggregates'));
    expect(await keys.count('ip')).toBeGreaterThanOrEqual(await rows('ip_aggregates'));

    // A retention pass deletes rows; an estimate may stay above the count, never fall below it.
    await database.db.deleteFrom('number_aggregates').where('number_key', '=', numbers[24]!).execute();
    expect(await keys.count('number')).toBeGreaterThanOrEqual(await rows('number_aggregates'));
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openReadDatabase, type Database } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { SqlLookupsRepository } from '../../src/store/repositories/lookups-repository.ts';
import { migrateToLatest, migrateUpTo } from '../../src/store/migrate.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { startHarness, validSampleEvent, type Harness } from '../support/harness.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/**
 * The shared data set keeps its (number, address) pairs by number alone; accounts' own scopes
 * keep them by address too (src/store/fold/distinct-sets.ts). Lookups across both scopes count each
 * member once (also through HTTP: test/http/lookups.test.ts, "merges with the caller's own events").
 */
describe('distinct sets', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('keep the shared scope’s pairs by number alone, with exact distinct counts, as a rebuild does', async () => {
    const fleet = (await h.account({ trusted: true })).account.account_id;
    const own = (await h.account()).account.account_id;
    const repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
    const pairs: Array<[string, string]> = [
      ['+441234500001', '198.51.100.201'],
      ['+441234500002', '198.51.100.201'],
      ['+441234500002', '198.51.100.201'],
      ['+441234500003', '198.51.100.201'],
      ['+441234500001', '198.51.100.202'],
    ];
    for (const [accountId, scope] of [
      [fleet, SHARED_SCOPE],
      [own, own],
    ] as const) {
      await repo.ingest({ accountId, scope }, pairs.map(([called_number, source_ip]) => validSampleEvent({ called_number, source_ip })));
    }
    // In two steps: the second's pairs are partly new, partly known, in each scope.
    await h.services.aggregateFolder.settle();
    await repo.ingest({ accountId: fleet, scope: SHARED_SCOPE }, [validSampleEvent({ called_number: '+441234500004', source_ip: '198.51.100.201' }), validSampleEvent({ called_number: '+441234500001', source_ip: '198.51.100.201' })]);
    await repo.ingest({ accountId: own, scope: own }, [validSampleEvent({ called_number: '+441234500005', source_ip: '198.51.100.201' }), validSampleEvent({ called_number: '+441234500001', source_ip: '198.51.100.203' })]);
    await h.services.aggregateFolder.settle();

    const db = h.services.database.db;
    const byAddress = await db.selectFrom('ip_numbers').select(['scope', 'number_key']).where('source_ip', '=', '198.51.100.201').execute();
    expect(byAddress.filter((row) => row.scope === SHARED_SCOPE)).toEqual([]);
    expect(byAddress.filter((row) => row.scope === own).map((row) => row.number_key).sort()).toEqual(['+441234500001', '+441234500002', '+441234500003', '+441234500005']);
    const byNumber = await db.selectFrom('number_sources').select('number_key').where('scope', '=', SHARED_SCOPE).where('source_ip', '=', '198.51.100.201').execute();
    expect(byNumber.map((row) => row.number_key).sort()).toEqual(['+441234500001', '+441234500002', '+441234500003', '+441234500004']);
    const counts = await db.selectFrom('ip_aggregates').select(['scope', 'called_number_count']).where('source_ip', '=', '198.51.100.201').where('scope', 'in', [SHARED_SCOPE, own]).execute();
    expect(Object.fromEntries(counts.map((row) => [row.scope, Number(row.called_number_count)]))).toEqual({ [SHARED_SCOPE]: 4, [own]: 4 });

    // Across both scopes each member counts once, whichever order the scopes come in: members
    // are looked up in the shared set, never walked there.
    const lookups = new SqlLookupsRepository(db, h.services.database.statements);
    for (const scopes of [
      [SHARED_SCOPE, own],
      [own, SHARED_SCOPE],
    ]) {
      expect((await lookups.ipAddress(scopes, '198.51.100.201', 5))?.calledNumberCount, scopes.join()).toBe(5);
      expect((await lookups.phoneNumber(scopes, '+441234500001'))?.sourceIpCount, scopes.join()).toBe(3);
    }

    const folded = await aggregateSnapshot(db);
    await rebuildAggregates(db, h.services.database.caps);
    expect(await aggregateSnapshot(db)).toEqual(folded);
  });
});

describe('migration 022: the shared scope’s pairs by number alone', () => {
  let store: TestDatabase;
  let database: Database;
  afterEach(async () => {
    await database.close();
    await store.drop();
  });

  it('removes the shared scope’s pairs by address and keeps accounts’ own', async () => {
    store = await freshDatabase();
    database = openReadDatabase(store.url);
    await migrateUpTo(database.db, database.caps, '021_access_version');
    await database.db
      .insertInto('ip_numbers')
      .values([
        { scope: SHARED_SCOPE, source_ip: '198.51.100.1', number_key: '+441234500001' },
        { scope: SHARED_SCOPE, source_ip: '198.51.100.2', number_key: '+441234500001' },
        { scope: 'an-account', source_ip: '198.51.100.1', number_key: '+441234500001' },
      ])
      .execute();
    await migrateToLatest(database.db, database.caps);
    expect(await database.db.selectFrom('ip_numbers').selectAll().execute()).toEqual([{ scope: 'an-account', source_ip: '198.51.100.1', number_key: '+441234500001' }]);
  });
});

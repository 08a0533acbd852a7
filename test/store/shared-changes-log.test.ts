import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase, openReadDatabase, type Database } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { migrateToLatest, migrateUpTo } from '../../src/store/migrate.ts';
import { LOG_PRUNE_BATCH, SqlTaxiiRepository } from '../../src/store/repositories/taxii-repository.ts';
import { validSampleEvent } from '../support/harness.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/**
 * The log of the shared data set's changes (migration 024), which the TAXII publisher reads in
 * place of an index on `changed_at`: every writer of a shared row appends its change, the
 * migration starts it where each collection reads from, and the publisher forgets what it has
 * read past. test/store/taxii-reads.test.ts reads it; this holds what writes it.
 */
let store: TestDatabase;
let database: Database;

afterEach(async () => {
  await database?.close();
  await store?.drop();
});

type Entry = { aggregates: string; changed: string; key: string };

/** The log's entries, of every table or of those named. */
async function log(tables?: string[]): Promise<Entry[]> {
  let query = database.db.selectFrom('shared_changes').selectAll();
  if (tables) query = query.where('aggregates', 'in', tables);
  const rows = await query.orderBy('aggregates').orderBy('changed').orderBy('key').execute();
  return rows.map((r) => ({ aggregates: r.aggregates, changed: r.changed, key: r.key }));
}

async function changedAt(table: 'number_aggregates' | 'ip_aggregates', key: 'number_key' | 'source_ip'): Promise<Entry[]> {
  const rows = await (database.db as any).selectFrom(table).select([`${key} as key`, 'changed_at']).where('scope', '=', SHARED_SCOPE).execute();
  return (rows as Array<{ key: string; changed_at: string }>).map((r) => ({ aggregates: table, changed: r.changed_at, key: r.key }));
}

/** The tables of numbers and addresses, whose rows keep their own changed_at. */
const KEYED = ['number_aggregates', 'ip_aggregates'];

const byEntry = (a: Entry, b: Entry) => `${a.aggregates} ${a.changed} ${a.key}`.localeCompare(`${b.aggregates} ${b.changed} ${b.key}`);

async function accounts(): Promise<{ fleet: string; own: string }> {
  const now = new Date().toISOString();
  await database.db
    .insertInto('accounts')
    .values([
      { account_id: 'fleet', name: 'fleet', plan: 'contributor', trusted: 1, disabled: 0, created_at: now },
      { account_id: 'own', name: 'own', plan: 'contributor', trusted: 0, disabled: 0, created_at: now },
    ])
    .execute();
  return { fleet: 'fleet', own: 'own' };
}

describe('the shared data set’s change log', () => {
  it('gets an entry from the fold for each shared row a step changes, at the row’s new changed_at, and none for accounts’ own scopes', async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    const { fleet, own } = await accounts();
    const repo = new SqlEventsRepository(database.db, database.ingestWrites);
    await repo.ingest({ accountId: fleet, scope: SHARED_SCOPE }, [
      validSampleEvent({ called_number: '+441234000001', source_ip: '198.51.100.1' }),
      validSampleEvent({ called_number: '+441234000001', source_ip: '198.51.100.2' }),
      validSampleEvent({ called_number: '+441234000002', source_ip: '198.51.100.1' }),
    ]);
    // An own event in a range of its own: its range is in no shared row, and so not in the log.
    await repo.ingest({ accountId: own, scope: own }, [validSampleEvent({ called_number: '+441299000003', source_ip: '198.51.100.3' })]);
    while ((await foldStep(database, 1000)).folded > 0);
    const first = [...(await changedAt('number_aggregates', 'number_key')), ...(await changedAt('ip_aggregates', 'source_ip'))].sort(byEntry);
    expect(first.map((e) => e.key).sort()).toEqual(['+441234000001', '+441234000002', '198.51.100.1', '198.51.100.2']);
    expect(await log(KEYED)).toEqual(first);
    // Range rows keep no changed_at: the fold logs the shared ranges it adds to, once a step.
    const ranges = await log(['range_aggregates']);
    expect(ranges.map((e) => e.key)).toEqual(['+4412340000']);

    // A later step appends the rows it changes again; their first entries stay behind them, to be
    // skipped by the reads and forgotten by the publisher.
    await repo.ingest({ accountId: fleet, scope: SHARED_SCOPE }, [validSampleEvent({ called_number: '+441234000002', source_ip: '198.51.100.2' })]);
    // A step stamps its rows with the millisecond it runs in: the next one runs in a later one.
    const latest = first.map((e) => e.changed).sort().at(-1)!;
    while (new Date().toISOString() <= latest) await nextTurn();
    while ((await foldStep(database, 1000)).folded > 0);
    const second = (await changedAt('number_aggregates', 'number_key')).filter((e) => e.key === '+441234000002');
    expect(second[0]!.changed > first.find((e) => e.key === '+441234000002')!.changed).toBe(true);
    const entries = await log(KEYED);
    expect(entries).toHaveLength(first.length + 2);
    expect(entries).toEqual(expect.arrayContaining([...first, ...second]));
    const rangesAfter = await log(['range_aggregates']);
    expect(rangesAfter.map((e) => e.key)).toEqual(['+4412340000', '+4412340000']);
    expect(rangesAfter[1]!.changed > ranges[0]!.changed).toBe(true);
  });

  it('gets an entry from a rebuild for every shared row, at the rebuild’s instant', async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    const { fleet, own } = await accounts();
    const repo = new SqlEventsRepository(database.db, database.ingestWrites);
    await repo.ingest({ accountId: fleet, scope: SHARED_SCOPE }, [validSampleEvent({ called_number: '+441234000011', source_ip: '198.51.100.11' })]);
    await repo.ingest({ accountId: own, scope: own }, [validSampleEvent({ called_number: '+441299000012', source_ip: '198.51.100.12' })]);
    while ((await foldStep(database, 1000)).folded > 0);
    await database.db.deleteFrom('shared_changes').execute();
    await rebuildAggregates(database.db, database.caps);
    const rows = [...(await changedAt('number_aggregates', 'number_key')), ...(await changedAt('ip_aggregates', 'source_ip'))].sort(byEntry);
    expect(rows).toHaveLength(2);
    expect(new Set(rows.map((r) => r.changed)).size).toBe(1);
    expect(await log(KEYED)).toEqual(rows);
    // The shared range too, at the same instant; the own one not.
    expect(await log(['range_aggregates'])).toEqual([{ aggregates: 'range_aggregates', changed: rows[0]!.changed, key: '+4412340000' }]);
  });

  it('loses, at each publication, the entries before where the collection’s next pass reads from, and only those', async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    const at = (s: number) => new Date(Date.UTC(2026, 10, 29, 12, 0, s)).toISOString();
    await database.db
      .insertInto('shared_changes')
      .values([
        ...[0, 5, 7, 8, 9, 20].map((s) => ({ aggregates: 'number_aggregates', changed: at(s), key: `+4412340${s}` })),
        { aggregates: 'ip_aggregates', changed: at(0), key: '198.51.100.20' },
      ])
      .execute();
    const taxii = new SqlTaxiiRepository(database.db, database.caps);
    const lease = new Date(Date.now() + 60_000).toISOString();
    expect(await taxii.claim('phone-numbers', 'me', new Date().toISOString(), lease)).toBeDefined();
    // A page of a first pass moves no changedThrough: nothing is forgotten.
    expect(await taxii.publish('phone-numbers', 'me', [], { firstPass: { next: 'x', through: at(9), hour: at(0) } }, lease)).toBe(true);
    expect(await log()).toHaveLength(7);
    // Read through 0:09: the next pass reads from two seconds before (changesReadFrom).
    expect(await taxii.publish('phone-numbers', 'me', [], { changedThrough: at(9), firstPass: null }, lease)).toBe(true);
    expect((await log()).map((e) => `${e.aggregates} ${e.changed}`)).toEqual([`ip_aggregates ${at(0)}`, `number_aggregates ${at(7)}`, `number_aggregates ${at(8)}`, `number_aggregates ${at(9)}`, `number_aggregates ${at(20)}`]);
    // A publisher that does not hold the lease forgets nothing.
    expect(await taxii.publish('phone-numbers', 'other', [], { changedThrough: at(30) }, lease)).toBe(false);
    expect(await log()).toHaveLength(5);
  });

  it('forgets at most LOG_PRUNE_BATCH entries a publication, oldest first, and the rest at the next', async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    const entries = Array.from({ length: LOG_PRUNE_BATCH + 10 }, (_, i) => ({ aggregates: 'number_aggregates', changed: '2026-11-29T12:00:00.000Z', key: `+44${String(i).padStart(9, '0')}` }));
    for (let at = 0; at < entries.length; at += 1000) await database.db.insertInto('shared_changes').values(entries.slice(at, at + 1000)).execute();
    const taxii = new SqlTaxiiRepository(database.db, database.caps);
    const lease = new Date(Date.now() + 60_000).toISOString();
    await taxii.claim('phone-numbers', 'me', new Date().toISOString(), lease);
    await taxii.publish('phone-numbers', 'me', [], { changedThrough: '2026-11-29T13:00:00.000Z' }, lease);
    expect((await log()).map((e) => e.key)).toEqual(entries.slice(LOG_PRUNE_BATCH).map((e) => e.key));
    await taxii.publish('phone-numbers', 'me', [], { changedThrough: '2026-11-29T13:00:00.000Z' }, lease);
    expect(await log()).toEqual([]);
  });
});

describe('migration 024', () => {
  it('starts the log a minute before where each collection reads from, or at the latest change, and drops the index it replaces', async () => {
    store = await freshDatabase();
    database = openReadDatabase(store.url);
    await migrateUpTo(database.db, database.caps, '023_taxii_first_pass_position');
    const db = database.db as any;
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 29, 12, minute)).toISOString();
    const row = (scope: string, minute: number, i: number) => ({ scope, seen_count: 1, first_seen: at(0), last_seen: at(minute), published_at: at(0), changed_at: at(minute), nodes: '{}', i });
    const numbers = [0, 10, 19, 20, 30].flatMap((minute, i) => [row(SHARED_SCOPE, minute, i), row('own', minute, i)]);
    await db
      .insertInto('number_aggregates')
      .values(numbers.map(({ i, ...r }) => ({ ...r, number_key: `+4412345${i}`, source_ip_count: 1, sip_methods: '{}', forms: '{}' })))
      .execute();
    const addresses = [0, 5, 5].map((minute, i) => row(SHARED_SCOPE, minute, i));
    await db
      .insertInto('ip_aggregates')
      .values(addresses.map(({ i, ...r }) => ({ ...r, source_ip: `198.51.100.${i}`, called_number_count: 1, user_agents: '{}', transports: '{}' })))
      .execute();
    // The numbers' collection has read through 12:20; the addresses' has never published.
    await db.insertInto('taxii_publication').values({ collection: 'phone-numbers', changed_through: at(20) }).execute();

    await migrateToLatest(database.db, database.caps);
    expect(await log()).toEqual([
      { aggregates: 'ip_aggregates', changed: at(5), key: '198.51.100.1' },
      { aggregates: 'ip_aggregates', changed: at(5), key: '198.51.100.2' },
      { aggregates: 'number_aggregates', changed: at(19), key: '+44123452' },
      { aggregates: 'number_aggregates', changed: at(20), key: '+44123453' },
      { aggregates: 'number_aggregates', changed: at(30), key: '+44123454' },
    ]);
    const indexes = database.caps.concurrentWriters
      ? await sql<{ name: string }>`select indexname as name from pg_indexes where indexname like '%shared_changes%'`.execute(database.db)
      : await sql<{ name: string }>`select name from sqlite_master where type = 'index' and name like '%shared_changes%'`.execute(database.db);
    expect(indexes.rows.map((r) => r.name).filter((name) => name.endsWith('_aggregates_shared_changes'))).toEqual([]);
  });
});

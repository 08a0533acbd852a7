import { afterEach, describe, expect, it } from 'vitest';
import { openReadDatabase, type Database } from '../../src/store/database.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { migrateToLatest, migrateUpTo } from '../../src/store/migrate.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/** An event row as an earlier version stored it; the migration reads only some fields. */
function eventRow(i: number, accountId: string) {
  const number = `+4420${7_000_000 + (i % 7)}`;
  return {
    account_id: accountId,
    event_uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    app_name: 'sentrypeer',
    app_version: '4.0.6',
    event_timestamp: '2026-11-20 10:00:00',
    created_by_node_id: `node-${i % 3}`,
    collected_method: 'responsive',
    transport_type: ['UDP', 'TCP'][i % 2],
    source_ip: `203.0.113.${i % 5}`,
    destination_ip: '192.0.2.1',
    called_number: number,
    sip_method: ['INVITE', 'OPTIONS', 'REGISTER'][i % 3],
    sip_user_agent: `scanner-${i % 4}`,
    sip_message: 'INVITE sip:100@192.0.2.1 SIP/2.0',
    event_time: `2026-11-20T10:00:${String(i % 60).padStart(2, '0')}.000000000Z`,
    number_key: i % 11 === 0 ? null : number,
    number_written: i % 11 === 0 ? null : number,
    content_hash: `hash-${i}`,
    received_at: '2026-11-20T10:00:00.000Z',
  };
}

describe('migration 010: folded aggregates', () => {
  let store: TestDatabase;
  let database: Database;
  afterEach(async () => {
    await database.close();
    await store.drop();
  });

  it('recomputes the wide aggregate rows from the events stored before it, and folds on from the newest of them', async () => {
    store = await freshDatabase();
    // Opened without migrating, to stop at the schema before 010.
    database = openReadDatabase(store.url);
    await migrateUpTo(database.db, database.caps, '009_signing_key_rotation');
    const db = database.db as any;
    const now = '2026-11-20T00:00:00.000Z';
    await db.insertInto('accounts').values([
      { account_id: 'fleet', name: 'fleet', plan: 'contributor', trusted: 1, disabled: 0, created_at: now },
      { account_id: 'own', name: 'own', plan: 'contributor', trusted: 0, disabled: 0, created_at: now },
    ]).execute();
    const rows = Array.from({ length: 60 }, (_, i) => eventRow(i, i % 2 ? 'fleet' : 'own'));
    await db.insertInto('events').values(rows).execute();

    await migrateToLatest(database.db, database.caps);
    const migrated = await aggregateSnapshot(database.db);
    expect(migrated.number_aggregates!.length).toBeGreaterThan(0);
    const position = await database.db.selectFrom('fold_state').select('through').executeTakeFirstOrThrow();
    const newest = await database.db.selectFrom('events').select((eb) => eb.fn.max('id').as('id')).executeTakeFirstOrThrow();
    expect(Number(position.through)).toBe(Number(newest.id));
    // What the migration computed is what today's rebuild computes from the same events.
    await rebuildAggregates(database.db, database.caps);
    expect(await aggregateSnapshot(database.db)).toEqual(migrated);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices } from '../../src/services.ts';
import { FOLD_CHUNK } from '../../src/aggregates/folder.ts';
import { FOLDED_ROWS_TOLD, foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { LOOKUP_VISIBILITY_MS, sampleEvent, startHarness, validSampleEvent, within, type Harness } from '../support/harness.ts';
import { TEST_STORE } from '../support/test-database.ts';

const aggregates = (h: Harness) => aggregateSnapshot(h.services.database.db);

async function seenCount(h: Harness, numberKey: string): Promise<number> {
  const rows = await h.services.database.db.selectFrom('number_aggregates').select('seen_count').where('number_key', '=', numberKey).execute();
  return rows.reduce((sum, r) => sum + Number(r.seen_count), 0);
}

describe('folding events into the lookup aggregates', () => {
  let h: Harness;
  let accountId: string;
  let repo: SqlEventsRepository;

  beforeAll(async () => {
    h = await startHarness();
    accountId = (await h.account()).account.account_id;
    repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('counts stored events only once folded, and exactly as a rebuild from the events would', async () => {
    await h.services.aggregateFolder.stop();
    const owner = { accountId, scope: accountId };
    await repo.ingest(owner, [validSampleEvent({ called_number: '+441234000001' }), validSampleEvent({ called_number: '+441234000001', source_ip: '198.51.100.9' })]);
    expect(await seenCount(h, '+441234000001')).toBe(0);
    await h.services.aggregateFolder.settle();
    expect(await seenCount(h, '+441234000001')).toBe(2);
    // Folding again finds nothing new: no event counts twice.
    await h.services.aggregateFolder.settle();
    expect(await seenCount(h, '+441234000001')).toBe(2);
    const folded = await aggregates(h);
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    expect(await aggregates(h)).toEqual(folded);
    h.services.aggregateFolder.start();
  });

  it('folds in steps, each moving the kept position, and resumes in another process where the last one stopped', async () => {
    await h.services.aggregateFolder.stop();
    const owner = { accountId, scope: accountId };
    await repo.ingest(owner, Array.from({ length: 7 }, () => validSampleEvent({ called_number: '+441234000002' })));
    const store = h.services.database;
    const first = await foldStep(store, 3);
    expect(first).toMatchObject({ folded: 3, more: true, changes: { numbers: ['+441234000002'] } });
    expect(await seenCount(h, '+441234000002')).toBe(3);
    // As after a crash: a new process on the store folds the rest, and only the rest.
    const other = await createServices(loadConfig({ ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: 'silent' }, false));
    try {
      await other.aggregateFolder.settle();
    } finally {
      await other.close();
    }
    expect(await seenCount(h, '+441234000002')).toBe(7);
    h.services.aggregateFolder.start();
  });

  it('passes on the rows a step wrote, as the store then holds them, up to FOLDED_ROWS_TOLD', async () => {
    await h.services.aggregateFolder.stop();
    const owner = { accountId, scope: accountId };
    const store = h.services.database;
    await repo.ingest(owner, [validSampleEvent({ called_number: '+441234000003', source_ip: '198.51.100.31' }), validSampleEvent({ called_number: '+441234000003', source_ip: '198.51.100.32' })]);
    const small = await foldStep(store, FOLD_CHUNK);
    const stored = await store.db.selectFrom('number_aggregates').selectAll().where('number_key', '=', '+441234000003').executeTakeFirstOrThrow();
    expect(small.changes.rows?.numbers).toEqual([
      expect.objectContaining({ scope: accountId, key: '+441234000003', seen_count: Number(stored.seen_count), distinct_count: 2, last_seen: stored.last_seen, counts: [stored.sip_methods, stored.forms, stored.nodes] }),
    ]);
    expect(small.changes.rows?.addresses.map((r) => r.key).sort()).toEqual(['198.51.100.31', '198.51.100.32']);
    // One more row than the bound (a number and an address per event): keys only.
    const events = Array.from({ length: FOLDED_ROWS_TOLD / 2 + 1 }, (_, i) => validSampleEvent({ called_number: `+4412350${String(i).padStart(5, '0')}`, source_ip: `10.1.${i >> 8}.${i & 255}` }));
    await repo.ingest(owner, events);
    const large = await foldStep(store, events.length);
    expect(large.changes.numbers).toHaveLength(events.length);
    expect(large.changes.rows).toBeUndefined();
    h.services.aggregateFolder.start();
  });

  it('lets an account look up its own events at once, and another account once folded', async () => {
    const trusted = await h.account({ trusted: true });
    const viewer = await h.account({ plan: 'business' });
    const res = await trusted.api('/api/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent({ called_number: '+441234000003' })) });
    expect(res.status).toBe(201);
    // Read-your-writes: no wait for the fold's turn.
    expect((await trusted.api('/api/phone-numbers/%2B441234000003')).status).toBe(200);
    // Another account: within the bound (docs/api.md §7).
    expect(await within(LOOKUP_VISIBILITY_MS, async () => (await viewer.api('/api/phone-numbers/%2B441234000003')).status === 200)).toBe(true);
  });

  // On PostgreSQL ids are handed out before commit: a fold must not pass an id whose
  // transaction is still open, or that event would never be counted.
  it.skipIf(TEST_STORE !== 'postgres')('never passes an event whose transaction commits after a later one', async () => {
    await h.services.aggregateFolder.stop();
    const owner = { accountId, scope: accountId };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const isInserted = new Promise<void>((resolve) => (inserted = resolve));
    // The early transaction: takes its id, then stays open.
    const early = h.services.database.db.transaction().execute(async (trx) => {
      await h.services.database.ingestWrites.beginIngest(trx);
      await h.services.database.ingestWrites.storeNew(trx, [
        { account_id: accountId, ...eventColumns(validSampleEvent({ called_number: '+441234000004' })), received_at: new Date().toISOString() },
      ]);
      inserted();
      await held;
    });
    await isInserted;
    // A later one commits first, with a higher id.
    await repo.ingest(owner, [validSampleEvent({ called_number: '+441234000005' })]);
    const fold = foldStep(h.services.database, FOLD_CHUNK);
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await early;
    await fold;
    await h.services.aggregateFolder.settle();
    expect(await seenCount(h, '+441234000004')).toBe(1);
    expect(await seenCount(h, '+441234000005')).toBe(1);
    h.services.aggregateFolder.start();
  });
});

function eventColumns(event: HoneypotEvent) {
  const { number_key, number_written, content_hash, event_time, ...fields } = event;
  return { ...fields, number_key, number_written, content_hash, event_time };
}

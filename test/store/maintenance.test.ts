import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreMaintenance } from '../../src/store/maintenance/maintenance.ts';
import { ensurePartitions } from '../../src/store/maintenance/partitions.ts';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { TEST_STORE } from '../support/test-database.ts';

const DAY = 86_400_000;

describe('retention and partitions', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('removes events older than the retention, keeps the rest, and recomputes the aggregates they counted in', async () => {
    const { db, caps } = h.services.database;
    const now = new Date();
    const old = new Date(now.getTime() - 200 * DAY);
    // Partitions for the old months exist, as they would have when those events arrived.
    if (caps.partitionedEvents) await ensurePartitions(db, old);

    const fleet = await h.account({ trusted: true });
    const oldStamp = old.toISOString();
    const recentStamp = new Date(now.getTime() - 2 * DAY).toISOString();
    const oldEvent = sampleEvent({ called_number: '+390662279016', source_ip: '198.18.9.1', event_timestamp: oldStamp });
    const sharedOld = sampleEvent({ called_number: '+46812118532', source_ip: '198.18.9.2', event_timestamp: oldStamp });
    const sharedRecent = sampleEvent({ called_number: '+46812118532', source_ip: '198.18.9.3', event_timestamp: recentStamp });
    for (const event of [oldEvent, sharedOld, sharedRecent]) expect((await postEvent(fleet, event)).status).toBe(201);

    const report = await new StoreMaintenance(h.services.database, 90).runOnce(now);
    // The two old events' numbers and addresses, whose aggregates were recomputed.
    expect(report.keysRecomputed).toEqual({ numbers: 2, addresses: 2 });
    if (caps.partitionedEvents) {
      expect(report.partitionsDropped.length).toBeGreaterThan(0);
      const left = await sql<{ n: string }>`select count(*) as n from pg_class where relname = ${`events_${old.toISOString().slice(0, 7).replace('-', '_')}`}`.execute(db);
      expect(Number(left.rows[0]?.n)).toBe(0);
    } else {
      expect(report.eventsRemoved).toBe(2);
    }

    expect((await fleet.api('/api/phone-numbers/%2B390662279016')).status).toBe(404);
    expect((await fleet.api(`/api/events/${oldEvent.event_uuid}`)).status).toBe(404);
    const kept = (await (await fleet.api('/api/phone-numbers/%2B46812118532')).json()) as Record<string, unknown>;
    expect(kept).toMatchObject({ seen_count: 1, source_ip_count: 1, first_seen: expect.stringContaining(recentStamp.slice(0, 19)) });
    expect((await fleet.api(`/api/events/${sharedRecent.event_uuid}`)).status).toBe(200);
    // A dropped event's uuid is free again: a node resending it is storing it anew.
    expect((await postEvent(fleet, { ...oldEvent, event_timestamp: recentStamp })).status).toBe(201);
  });

  it('creates partitions ahead on PostgreSQL, and is harmless to run again', async () => {
    const maintenance = new StoreMaintenance(h.services.database, undefined);
    await maintenance.runOnce();
    const report = await maintenance.runOnce();
    expect(report).toEqual({ partitionsDropped: [], eventsRemoved: 0, auditRowsRemoved: 0 });
    if (TEST_STORE === 'postgres') {
      const ahead = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 2, 1)).toISOString().slice(0, 7).replace('-', '_');
      const found = await sql<{ n: string }>`select count(*) as n from pg_class where relname = ${`events_${ahead}`}`.execute(h.services.database.db);
      expect(Number(found.rows[0]?.n)).toBe(1);
    }
  });
});

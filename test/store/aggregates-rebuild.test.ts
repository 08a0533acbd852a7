import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/aggregates-rebuild.ts';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';

const TABLES = ['number_stats', 'number_methods', 'number_forms', 'number_sources', 'ip_stats', 'ip_user_agents', 'ip_transports', 'ip_numbers'] as const;

describe('rebuilding aggregates from events', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  async function snapshot() {
    const out: Record<string, unknown[]> = {};
    for (const table of TABLES) {
      const rows = (await h.services.database.db.selectFrom(table).selectAll().execute()) as Array<Record<string, unknown>>;
      out[table] = rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v])))).sort();
    }
    return out;
  }

  it('recomputes exactly what incremental updates kept', async () => {
    const fleet = await h.account({ trusted: true });
    const a = await h.account();
    const numbers = ['0046812118532', '+46812118532', '01146812118532', '100', '', 'not a number!'];
    const ips = ['203.0.113.1', '203.0.113.2', '2001:db8::9'];
    let i = 0;
    for (const who of [fleet, a, fleet, a]) {
      for (const called_number of numbers) {
        const event = sampleEvent({
          called_number,
          source_ip: ips[i % ips.length],
          sip_method: ['INVITE', 'OPTIONS'][i % 2],
          sip_user_agent: ['x', 'y', ''][i % 3],
          transport_type: ['UDP', 'TCP', 'TLS'][i % 3],
          event_timestamp: `2026-11-${10 + (i % 9)} 0${i % 10}:00:00.${i}`,
        });
        i += 1;
        expect((await postEvent(who, event)).status).toBe(201);
      }
    }
    const incremental = await snapshot();
    expect(incremental.number_stats!.length).toBeGreaterThan(0);
    await rebuildAggregates(h.services.database.db);
    expect(await snapshot()).toEqual(incremental);
  });

  it('moves past events into the shared data set after a trust change', async () => {
    const later = await h.account();
    const viewer = await h.account({ plan: 'business' });
    expect((await postEvent(later, sampleEvent({ called_number: '+390662279016' }))).status).toBe(201);
    expect((await viewer.api('/api/phone-numbers/%2B390662279016')).status).toBe(404);
    await h.services.accounts.setTrusted(later.account.account_id, true);
    await rebuildAggregates(h.services.database.db);
    expect((await viewer.api('/api/phone-numbers/%2B390662279016')).status).toBe(200);
  });
});

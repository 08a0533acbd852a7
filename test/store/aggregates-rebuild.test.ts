import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';

describe('rebuilding aggregates from events', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  const snapshot = () => aggregateSnapshot(h.services.database.db);

  it('recomputes exactly what incremental updates kept', async () => {
    const fleet = await h.account({ trusted: true });
    const a = await h.account();
    const numbers = ['0046812118532', '+46812118532', '01146812118532', '100', '', 'not a number!', 'NOT_FOUND'];
    const ips = ['203.0.113.1', '203.0.113.2', '2001:db8::9'];
    let i = 0;
    for (const who of [fleet, a, fleet, a]) {
      for (const called_number of numbers) {
        const event = sampleEvent({
          called_number,
          source_ip: ips[i % ips.length],
          sip_method: ['INVITE', 'OPTIONS'][i % 2],
          sip_user_agent: ['x', 'y', '', 'NOT_FOUND'][i % 4],
          transport_type: ['UDP', 'TCP', 'TLS'][i % 3],
          event_timestamp: `2026-11-${10 + (i % 9)} 0${i % 10}:00:00.${i}`,
        });
        i += 1;
        expect((await postEvent(who, event)).status).toBe(201);
      }
    }
    await h.settled();
    const incremental = await snapshot();
    expect(incremental.number_aggregates!.length).toBeGreaterThan(0);
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    expect(await snapshot()).toEqual(incremental);
  });

  it('moves past events into the shared data set after a trust change', async () => {
    const later = await h.account();
    const viewer = await h.account({ plan: 'business' });
    expect((await postEvent(later, sampleEvent({ called_number: '+390662279016' }))).status).toBe(201);
    expect((await viewer.api('/api/phone-numbers/%2B390662279016')).status).toBe(404);
    await h.services.accounts.setTrusted(later.account.account_id, true);
    // Through the services, which also forget the lookups they answered from memory.
    await h.services.rebuildAggregates();
    expect((await viewer.api('/api/phone-numbers/%2B390662279016')).status).toBe(200);
  });

  it('counts long user agents of any script by their first 256 characters, the same way when rebuilt', async () => {
    const fleet = await h.account({ trusted: true });
    const viewer = await h.account({ plan: 'business' });
    // 1,024 CJK characters are 3,072 bytes in UTF-8: more than PostgreSQL can index whole.
    const cjk = '漢字'.repeat(512);
    const emoji = '😀'.repeat(300);
    const agents = [cjk, `${cjk.slice(0, 256)}different tail`, emoji, `${emoji}!`];
    for (const [i, sip_user_agent] of agents.entries()) {
      const res = await postEvent(fleet, sampleEvent({ source_ip: '192.0.2.77', sip_user_agent, event_timestamp: `2026-11-20 01:00:0${i}` }));
      expect(res.status).toBe(201);
    }
    await h.settled();
    const answer = (await (await viewer.api('/api/ip-addresses/192.0.2.77')).json()) as { seen_count: number; user_agents: Array<{ user_agent: string; count: number }> };
    expect(answer.seen_count).toBe(4);
    expect(answer.user_agents).toEqual(
      expect.arrayContaining([
        { user_agent: cjk.slice(0, 256), count: 2 },
        { user_agent: '😀'.repeat(256), count: 2 },
      ]),
    );
    expect(answer.user_agents).toHaveLength(2);
    const incremental = await snapshot();
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    expect(await snapshot()).toEqual(incremental);
  });
});

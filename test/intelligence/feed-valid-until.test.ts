import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decayWeight } from '../../src/domain/intelligence/scores.ts';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;

interface JsonEntry {
  ip_address?: string;
  phone_number?: string;
  score: number;
  last_seen: string;
  valid_until?: string;
}

/**
 * The JSON feed's `valid_until` (docs/api.md §14): each entry's is the STIX indicator's for the
 * same value and threshold, a whole hour after the scoring hour, the first at which the score
 * falls below `min_score`; absent with `min_score=0`, and in no other format.
 */
describe('valid_until in the JSON feed', () => {
  let h: Harness;
  let who: TestAccount;
  const HALF_LIFE_DAYS = 30;

  const json = async (query: string) => {
    const res = await who.api(`/api/feeds/${query}${query.includes('?') ? '&' : '?'}format=json`);
    expect(res.status).toBe(200);
    return (await res.json()) as { scored_at: string; entries: JsonEntry[] };
  };

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_SCORE_HALF_LIFE_DAYS: String(HALF_LIFE_DAYS) });
    who = await h.account();
    const events = [
      ...Array.from({ length: 6 }, (_, i) => sampleEvent({ source_ip: '203.0.113.50', called_number: `+4681211870${i}`, created_by_node_id: `732e7f50-637d-4fde-81e0-5c32f1bb5a9${i % 3}`, event_timestamp: ago(90 + i) })),
      sampleEvent({ source_ip: '2001:db8::50', called_number: '+46812118799', event_timestamp: ago(3 * 24 * 60) }),
    ];
    for (const event of events) expect((await postEvent(who, event)).status).toBe(201);
    await h.settled();
  });
  afterAll(() => h?.close());

  for (const kind of ['ip-addresses', 'phone-numbers'] as const) {
    it(`${kind}: the STIX indicator's valid_until, the first hour whose score is below min_score`, async () => {
      const feed = await json(`${kind}?min_score=5`);
      expect(feed.entries.length).toBeGreaterThan(1);
      const stix = (await (await who.api(`/api/feeds/${kind}?min_score=5&format=stix`)).json()) as { objects: Array<{ pattern: string; valid_until?: string }> };
      const scoredAt = Date.parse(feed.scored_at);
      for (const entry of feed.entries) {
        const value = entry.ip_address ?? entry.phone_number!;
        const until = Date.parse(entry.valid_until!);
        expect(until % HOUR, value).toBe(0);
        expect(until).toBeGreaterThan(scoredAt);
        const indicator = stix.objects.find((o) => o.pattern.includes(`'${value}'`))!;
        expect(Date.parse(indicator.valid_until!), value).toBe(until);
        // The score at that hour and the hour before, from the entry's own score now (rounded: ± ½).
        const ageDays = (t: number) => (t - Date.parse(entry.last_seen)) / DAY;
        const at = (t: number) => entry.score * (decayWeight(ageDays(t), HALF_LIFE_DAYS) / decayWeight(ageDays(scoredAt), HALF_LIFE_DAYS));
        expect(at(until), value).toBeLessThan(5.1);
        expect(at(until - HOUR), value).toBeGreaterThan(3.9);
      }
    });
  }

  it('a higher threshold ends sooner; with min_score=0 there is none, and CSV and text never carry it', async () => {
    const low = new Map((await json('ip-addresses?min_score=5')).entries.map((e) => [e.ip_address, e.valid_until!]));
    const high = (await json('ip-addresses?min_score=10')).entries;
    expect(high.length).toBeGreaterThan(0);
    for (const e of high) expect(Date.parse(e.valid_until!)).toBeLessThan(Date.parse(low.get(e.ip_address)!));
    const none = await json('ip-addresses?min_score=0');
    expect(none.entries.length).toBeGreaterThan(1);
    expect(none.entries.every((e) => !('valid_until' in e))).toBe(true);
    const csv = await (await who.api('/api/feeds/ip-addresses?min_score=5&format=csv')).text();
    expect(csv.split('\r\n')[0]).toBe('ip_address,score,seen_count,first_seen,last_seen,tags');
  });
});

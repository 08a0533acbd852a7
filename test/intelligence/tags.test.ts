import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headline } from '../../src/delivery/alert-text.ts';
import { signedIn } from '../dashboard/web-client.ts';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** An event time `minutes` ago, in the node's form. */

/**
 * Tags (docs/scoring.md, "Tags"): the tools an address's User-Agents name, in its lookup
 * answer, its feed entries in every format and the alerts about it; the raw agents are kept.
 */
describe('scanner tags in answers, feeds and alerts', () => {
  let h: Harness;
  let who: TestAccount;
  const TAGGED = '203.0.113.77';
  const UNTAGGED = '203.0.113.78';

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    for (const [i, agent] of ['friendly-scanner', 'sipsak 0.9.8', 'friendly-scanner', 'Zoiper v2.10'].entries()) {
      expect((await postEvent(who, sampleEvent({ source_ip: TAGGED, sip_user_agent: agent, called_number: `+4681211850${i}`, event_timestamp: ago(5 + i) }))).status).toBe(201);
    }
    expect((await postEvent(who, sampleEvent({ source_ip: UNTAGGED, sip_user_agent: 'Asterisk PBX 18', event_timestamp: ago(3) }))).status).toBe(201);
    await h.settled();
  });
  afterAll(() => h?.close());

  it('an address’s answer names the tools of its User-Agents, and keeps the agents', async () => {
    const tagged = (await (await who.api(`/api/ip-addresses/${TAGGED}`)).json()) as Record<string, any>;
    expect(tagged.tags).toEqual(['sipvicious', 'sipsak']);
    expect(tagged.user_agents).toEqual(expect.arrayContaining([{ user_agent: 'friendly-scanner', count: 2 }, { user_agent: 'Zoiper v2.10', count: 1 }]));
    const plain = (await (await who.api(`/api/ip-addresses/${UNTAGGED}`)).json()) as Record<string, any>;
    expect(plain.tags).toEqual([]);
    const bulk = (await (await who.api('/api/ip-addresses/lookup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ip_addresses: [TAGGED] }) })).json()) as { results: Array<Record<string, any>> };
    expect(bulk.results[0]!.tags).toEqual(['sipvicious', 'sipsak']);
  });

  it('the address feed carries them: JSON tags, a CSV column, STIX labels', async () => {
    const entries = ((await (await who.api('/api/feeds/ip-addresses?min_score=0&format=json')).json()) as { entries: Array<Record<string, any>> }).entries;
    expect(entries.find((e) => e.ip_address === TAGGED)!.tags).toEqual(['sipvicious', 'sipsak']);
    expect(entries.find((e) => e.ip_address === UNTAGGED)!.tags).toEqual([]);
    const csv = (await (await who.api('/api/feeds/ip-addresses?min_score=0&format=csv')).text()).trim().split('\r\n');
    expect(csv[0]).toBe('ip_address,score,seen_count,first_seen,last_seen,tags');
    expect(csv.find((row) => row.startsWith(`${TAGGED},`))!.endsWith(',sipvicious sipsak')).toBe(true);
    expect(csv.find((row) => row.startsWith(`${UNTAGGED},`))!.endsWith(',')).toBe(true);
    const stix = (await (await who.api('/api/feeds/ip-addresses?min_score=0&format=stix')).json()) as { objects: Array<Record<string, any>> };
    const indicator = (ip: string) => stix.objects.find((o) => String(o.pattern).includes(`'${ip}'`))!;
    expect(indicator(TAGGED).labels).toEqual(['sipvicious', 'sipsak']);
    expect(indicator(UNTAGGED)).not.toHaveProperty('labels');
    // Numbers keep no User-Agents, so their feed has no tags column.
    expect((await (await who.api('/api/feeds/phone-numbers?min_score=0&format=csv')).text()).split('\r\n')[0]).toBe('phone_number,score,seen_count,first_seen,last_seen');
  });

  it('the dashboard’s address page and lookup name the tools, by their own names', async () => {
    const { browser } = await signedIn(h, who.account.account_id);
    expect((await browser.get(`/addresses/${TAGGED}`)).text).toContain('<dt>Tools its User-Agents name</dt><dd>SIPVicious, sipsak</dd>');
    expect((await browser.get(`/lookup?q=${TAGGED}`)).text).toContain('Its User-Agents name <strong>SIPVicious, sipsak</strong>');
    expect((await browser.get(`/addresses/${UNTAGGED}`)).text).not.toContain('Tools its User-Agents name');
  });

  it('an alert about an address names its tools beside its score', () => {
    const data = { lookup: 'ip_address', ip_address: TAGGED, score: 41, reasons: ['sent 4 probes'], tags: ['sipvicious', 'sipsak'] };
    expect(headline({ type: 'lookup.matched', timestamp: '2026-11-25T00:00:00Z', data } as never)).toBe(
      `Tollwatch: a looked-up address was seen probing honeypots (${TAGGED}, score 41: sent 4 probes; its User-Agents name SIPVicious, sipsak)`,
    );
    expect(headline({ type: 'lookup.matched', timestamp: '2026-11-25T00:00:00Z', data: { ...data, tags: [] } } as never)).toBe(
      `Tollwatch: a looked-up address was seen probing honeypots (${TAGGED}, score 41: sent 4 probes)`,
    );
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';
import { escapeHtml } from '../../src/web/html.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';

const HOSTILE_MESSAGE = 'OPTIONS sip:100@198.51.100.2 SIP/2.0\r\nSubject: <script>alert("sip")</script>\r\n\r\n';
const HOSTILE_AGENT = '<img src=x onerror=alert(1)>';
const NODE_OLD = '11111111-1111-4111-8111-111111111111';
const NODE_NOW = '22222222-2222-4222-8222-222222222222';
const NODE_OF_B = '33333333-3333-4333-8333-333333333333';
const NUMBER_OF_A = '+442071838750';
const ADDRESS_OF_A = '192.0.2.77';
const NUMBER_OF_B = '+33155550002';

const now = () => new Date().toISOString().replace('T', ' ').slice(0, 19);

describe('Events, Nodes, Overview and Lookup: own events only (docs/dashboard.md)', () => {
  let h: Harness;
  let a: TestAccount;
  let b: TestAccount;
  let pageA: WebClient;
  let pageB: WebClient;
  let hostileUuid: string;

  beforeAll(async () => {
    h = await startHarness();
    a = await h.account();
    b = await h.account();
    ({ browser: pageA } = await signedIn(h, a.account.account_id));
    ({ browser: pageB } = await signedIn(h, b.account.account_id));
    const hostile = sampleEvent({ sip_method: 'OPTIONS', sip_message: HOSTILE_MESSAGE, sip_user_agent: HOSTILE_AGENT, created_by_node_id: NODE_NOW, event_timestamp: now() });
    hostileUuid = hostile.event_uuid as string;
    const batch = Array.from({ length: 60 }, () => sampleEvent({ created_by_node_id: NODE_OLD, called_number: NUMBER_OF_A, source_ip: ADDRESS_OF_A }));
    const res = await a.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) });
    expect(res.status).toBe(200);
    expect((await postEvent(a, hostile)).status).toBe(201);
    expect((await postEvent(a, sampleEvent({ sip_user_agent: '=HYPERLINK("http://evil")', created_by_node_id: NODE_NOW, event_timestamp: now() }))).status).toBe(201);
    expect((await postEvent(b, sampleEvent({ created_by_node_id: NODE_OF_B, called_number: NUMBER_OF_B, source_ip: '198.51.100.99' }))).status).toBe(201);
  });
  afterAll(() => h?.close());

  it('lists the account’s events newest first, pages by cursor, and escapes what attackers wrote', async () => {
    const first = await pageA.get('/events');
    expect(first.status).toBe(200);
    expect(first.text).not.toContain(HOSTILE_AGENT);
    expect(first.text).toContain('&#60;img src=x onerror=alert(1)&#62;');
    expect(first.text).not.toContain(NUMBER_OF_B);
    const next = /<a rel="next" href="([^"]+)"/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await pageA.get(next!.replace(/&#38;/g, '&'));
    expect(second.status).toBe(200);
    expect((second.text.match(/<tr><td data-label="Time \(UTC\)"><a href="\/events\//g) ?? []).length).toBe(62 - 50);
  });

  it('says where a page is in the whole, and pages newer, older and back to the newest by keyset both ways', async () => {
    const rowsOf = (text: string) => [...text.matchAll(/<tr><td data-label="Time \(UTC\)"><a href="\/events\/([0-9a-f-]{36})/g)].map((m) => m[1]);
    const linkNamed = (text: string, rel: string) => [...text.matchAll(/<a rel="([a-z]+)" href="([^"]+)"/g)].find((m) => m[1] === rel)?.[2]?.replace(/&#38;/g, '&');
    const first = await pageA.get('/events');
    expect(first.text).toContain('Events 1–50 of 62');
    expect(first.text).not.toContain('rel="prev"');
    const second = await pageA.get(linkNamed(first.text, 'next')!);
    expect(second.text).toContain('Events 51–62 of 62');
    expect(second.text).not.toContain('rel="next"');
    expect(second.text).toContain('<a href="/events">« Newest</a>');
    // Newer from the second page is the first page again, whole, with no way newer.
    const back = await pageA.get(linkNamed(second.text, 'prev')!);
    expect(rowsOf(back.text)).toEqual(rowsOf(first.text));
    expect(back.text).toContain('Events 1–50 of 62');
    expect(back.text).not.toContain('rel="prev"');
    // A filter is kept on every link, and the total counts the filter's events.
    const filtered = await pageA.get(`/events?node_id=${NODE_OLD}`);
    expect(filtered.text).toContain('Events 1–50 of 60');
    const older = await pageA.get(linkNamed(filtered.text, 'next')!);
    expect(older.text).toContain('Events 51–60 of 60');
    expect(linkNamed(older.text, 'prev')).toContain(`node_id=${NODE_OLD}`);
    // A cursor another page made cannot be a newer cursor of another account.
    const cursor = new URL(linkNamed(first.text, 'next')!, 'http://x').searchParams.get('cursor')!;
    expect((await pageB.get(`/events?newer=${encodeURIComponent(cursor)}`)).status).toBe(422);
  });

  it('counts no further than its bound, and a range by its addresses', async () => {
    const repo = new SqlEventsRepository(h.services.database.db, h.services.database.ingestWrites);
    expect(await repo.countUpTo(a.account.account_id, {}, 10)).toBe(11);
    expect(await repo.countUpTo(a.account.account_id, {}, 100)).toBe(62);
    expect(await repo.countUpTo(a.account.account_id, { nodeId: NODE_OLD }, 100)).toBe(60);
    expect(await h.services.eventQuery.count(a.account, { source_ip: '192.0.2.0/24' })).toEqual({ count: 60, bound: 'exact' });
    // The store narrows by "192.0.2." alike for both; only the first range holds the address.
    expect(await h.services.eventQuery.count(a.account, { source_ip: '192.0.2.64/26' })).toEqual({ count: 60, bound: 'exact' });
    expect(await h.services.eventQuery.count(a.account, { source_ip: '192.0.2.128/25' })).toEqual({ count: 0, bound: 'exact' });
  });

  it('filters as GET /api/events does, and names a bad filter', async () => {
    const options = await pageA.get('/events?sip_method=OPTIONS');
    expect((options.text.match(/<tr><td data-label="Time \(UTC\)"><a href="\/events\//g) ?? []).length).toBe(1);
    const bad = await pageA.get('/events?source_ip=not-an-address&since=yesterday');
    expect(bad.status).toBe(422);
    // Each reason in words, at its field, which keeps what was typed.
    expect(bad.text).toContain('<p class="field-error" id="source_ip-error">The source address must be an IPv4 or IPv6 address');
    expect(bad.text).toMatch(/<input id="f-source_ip" name="source_ip" value="not-an-address" [^>]*aria-invalid="true" aria-describedby="source_ip-error">/);
    expect(bad.text).toContain('id="since-error">Since ');
    // A day alone is the whole day; the method is chosen, not typed.
    const today = new Date().toISOString().slice(0, 10);
    const day = await pageA.get(`/events?since=${today}&until=${today}&sip_method=OPTIONS`);
    expect(day.status).toBe(200);
    expect((day.text.match(/<tr><td data-label="Time \(UTC\)"><a href="\/events\//g) ?? []).length).toBe(1);
    expect(day.text).toContain('<option value="OPTIONS" selected>OPTIONS</option>');
  });

  it('keeps only the filters in use in its URL, and its place when going back from an event', async () => {
    // The form sends every field; the page is said again without the empty ones.
    const sent = await pageA.get('/events?since=&until=&called_number=&source_ip=&sip_method=OPTIONS&node_id=&collected_method=&transport_type=');
    expect(sent.status).toBe(303);
    expect(sent.location).toBe('/events?sip_method=OPTIONS');
    expect((await pageA.get('/events?sip_method=')).location).toBe('/events');
    // An event opened from the second page of a filtered list leads back to that page.
    const first = await pageA.get(`/events?node_id=${NODE_OLD}`);
    const next = /<a rel="next" href="([^"]+)"/.exec(first.text)![1]!.replace(/&#38;/g, '&');
    const second = await pageA.get(next);
    const opened = /<tr><td data-label="Time \(UTC\)"><a href="(\/events\/[^"]+)"/.exec(second.text)![1]!.replace(/&#38;/g, '&');
    const from = new URL(opened, 'http://x').searchParams.get('from')!;
    expect(new URLSearchParams(from).get('node_id')).toBe(NODE_OLD);
    expect(new URLSearchParams(from).get('cursor')).toBe(new URL(next, 'http://x').searchParams.get('cursor'));
    const detail = await pageA.get(opened);
    expect(detail.status).toBe(200);
    const back = /<a href="([^"]+)">Back to the events<\/a>/.exec(detail.text)![1]!.replace(/&#38;/g, '&');
    expect(back).toBe(next);
    // Only the events page's own parameters come back, and always to /events.
    const uuid = opened.slice('/events/'.length, opened.indexOf('?'));
    const hostile = await pageA.get(`/events/${uuid}?${new URLSearchParams({ from: 'next=//evil.example&sip_method=INVITE&x="><script>' }).toString()}`);
    expect(/<a href="([^"]+)">Back to the events<\/a>/.exec(hostile.text)![1]).toBe('/events?sip_method=INVITE');
    expect((await pageA.get(`/events/${uuid}`)).text).toContain('<a href="/events">Back to the events</a>');
  });

  it('shows one event whole, its SIP message as escaped text, and another account’s as missing', async () => {
    const detail = await pageA.get(`/events/${hostileUuid}`);
    expect(detail.status).toBe(200);
    expect(detail.text).toContain('<pre class="sip">OPTIONS sip:100@198.51.100.2 SIP/2.0\r\nSubject: &#60;script&#62;alert(&#34;sip&#34;)&#60;/script&#62;');
    expect(detail.text).not.toContain('<script>alert');
    expect((await pageB.get(`/events/${hostileUuid}`)).status).toBe(404);
  });

  it('exports the filtered set as CSV and NDJSON, streamed, and only the account’s own', async () => {
    const csv = await pageA.get('/export/events.csv');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="tollwatch-events-.*\.csv"$/);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('app_name,app_version,event_timestamp,event_uuid,created_by_node_id,collected_method,transport_type,source_ip,destination_ip,called_number,sip_method,sip_user_agent,sip_message,event_time,received_at');
    expect(csv.text).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(csv.text).toContain(`,${NUMBER_OF_A},`);
    expect(csv.text).not.toContain(NUMBER_OF_B);
    const ndjson = await pageA.get(`/export/events.ndjson?node_id=${NODE_OLD}`);
    const events = ndjson.text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
    expect(events).toHaveLength(60);
    expect(new Set(events.map((e) => e.created_by_node_id))).toEqual(new Set([NODE_OLD]));
    const theirs = await pageB.get('/export/events.ndjson');
    expect(theirs.text.trimEnd().split('\n')).toHaveLength(1);
    expect(theirs.text).not.toContain(NODE_OLD);
    expect((await pageA.get('/export/events.csv?transport_type=SCTP')).status).toBe(422);
  });

  it('lets an owner name a node: its pages show the name, another account’s show nothing of it', async () => {
    await pageA.get('/nodes');
    expect((await pageA.post(`/nodes/${NODE_OLD}/name`, { name: 'Kiruna <PoP>' })).status).toBe(303);
    const nodes = (await pageA.get('/nodes')).text;
    expect(nodes.split('<tr').find((row) => row.includes(NODE_OLD))).toContain('<strong>Kiruna &#60;PoP&#62;</strong>');
    const filtered = (await pageA.get(`/events?node_id=${NODE_OLD}`)).text;
    expect(filtered).toContain(`<td data-label="Node"><a href="/events?node_id=${NODE_OLD}" title="This node’s events">Kiruna &#60;PoP&#62;</a></td>`);
    // The filter offers the node by its name.
    expect(filtered).toContain(`<option value="${NODE_OLD}" selected>Kiruna &#60;PoP&#62;</option>`);
    expect((await pageA.get('/events')).text).toContain(`<option value="${NODE_OLD}">Kiruna &#60;PoP&#62;</option>`);
    expect((await pageA.post(`/nodes/${NODE_OLD}/name`, { name: 'x'.repeat(201) })).status).toBe(422);
    expect((await pageB.get('/nodes')).text).not.toContain('Kiruna');
    const { browser: member } = await signedIn(h, a.account.account_id, 'member');
    await member.get('/nodes');
    expect((await member.post(`/nodes/${NODE_OLD}/name`, { name: 'mine' })).status).toBe(403);
    // An empty name forgets it.
    await pageA.get('/nodes');
    expect((await pageA.post(`/nodes/${NODE_OLD}/name`, { name: '' })).status).toBe(303);
    expect((await pageA.get('/nodes')).text).not.toContain('Kiruna');
  });

  it('shows one row per node with its counts, marking the silent ones', async () => {
    const nodes = await pageA.get('/nodes');
    expect(nodes.status).toBe(200);
    const old = nodes.text.split('<tr').find((row) => row.includes(NODE_OLD))!;
    const recent = nodes.text.split('<tr').find((row) => row.includes(NODE_NOW))!;
    expect(old).toContain('silent');
    expect(old).toContain('<td data-label="Events">60</td>');
    expect(old).toContain('INVITE 60');
    expect(old).toContain('UDP 60');
    expect(recent).not.toContain('badge');
    expect(recent).toContain('OPTIONS 1');
    expect(nodes.text).not.toContain(NODE_OF_B);
    const theirs = await pageB.get('/nodes');
    expect(theirs.text).toContain(NODE_OF_B);
    expect(theirs.text).not.toContain(NODE_OLD);
    expect(theirs.text).not.toContain(NODE_NOW);
  });

  it('draws the overview from the account’s own events only', async () => {
    const mine = await pageA.get('/overview?days=30');
    expect(mine.status).toBe(200);
    expect(mine.text).toContain('<svg role="img"');
    expect(mine.text).toContain(NUMBER_OF_A);
    expect(mine.text).toContain(ADDRESS_OF_A);
    expect(mine.text).toContain('&#60;img src=x onerror=alert(1)&#62;');
    expect(mine.text).toMatch(/<title>GB: 60<\/title>/);
    expect(mine.text).not.toContain(NUMBER_OF_B);
    // The period is the last 30 days from now: its first day began before it, its last is still
    // going; both are marked partial, in the caption, on their bars and in the numbers.
    expect(mine.text).toContain('Events per day (UTC; at most 60 events in a day; the first and last day partial, drawn paler)');
    expect(mine.text.match(/class="bar partial"/g)).toHaveLength(2);
    expect(mine.text).toMatch(/<th scope="row">\d{4}-\d{2}-\d{2} \(partial\)<\/th><td>2<\/td>/);
    const theirs = await pageB.get('/overview?days=30');
    expect(theirs.text).toContain(NUMBER_OF_B);
    expect(theirs.text).not.toContain(NUMBER_OF_A);
    expect(theirs.text).not.toContain(ADDRESS_OF_A);
    expect(theirs.text).not.toContain('onerror');
  });

  it('shows a lookups-only account with no events what it can do and its lookups, not eight empty charts', async () => {
    const lookups = await h.account({ plan: 'tester' });
    const { browser } = await signedIn(h, lookups.account.account_id);
    const overview = (await browser.get('/overview')).text;
    expect(overview).toContain('this plan looks up numbers and addresses but does not submit events');
    expect(overview).not.toContain('No events in this period');
    expect(overview).not.toContain('Nothing in this period');
    expect(overview).toContain('Lookups (phone numbers and addresses), this window: 0 of 5');
  });

  it('looks up as the API answers this account, and counts against the plan', async () => {
    const lookup = (page: typeof pageA, q: string) => page.get(`/lookup?${new URLSearchParams({ q }).toString()}`);
    const seen = await lookup(pageA, NUMBER_OF_A);
    expect(seen.status).toBe(200);
    expect(seen.text).toContain('<strong>SEEN</strong>');
    const api = (await (await a.api(`/api/phone-numbers/${encodeURIComponent(NUMBER_OF_A)}`)).json()) as Record<string, unknown>;
    expect(seen.text).toContain(`&#34;seen_count&#34;: ${api.seen_count}`);
    // Why it is flagged, in words, above the JSON: the API's score and each of its reasons.
    expect(seen.text).toContain(`${api.score as number} of 100</h2>`);
    for (const reason of api.reasons as string[]) expect(seen.text).toContain(`<li>${escapeHtml(reason)}</li>`);
    const unseen = await lookup(pageB, NUMBER_OF_A);
    expect(unseen.text).toContain('<strong>Not seen</strong>');
    const address = await lookup(pageA, ADDRESS_OF_A);
    expect(address.text).toContain('&#34;ip_address&#34;: &#34;192.0.2.77&#34;');
    expect((await lookup(pageA, 'not a number!')).status).toBe(400);
    // The form of earlier pages posted: it is sent to the lookup's own URL, spending nothing itself.
    await pageA.get('/lookup');
    const posted = await pageA.post('/lookup', { q: NUMBER_OF_A });
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(`/lookup?q=${encodeURIComponent(NUMBER_OF_A)}`);
    const plan = (await h.services.plans.find('contributor'))!;
    const usage = await h.services.limiter.usage('lookups', a.account.account_id, plan.lookups);
    expect(usage.used).toBe(4);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';

const NUMBER = '+442071838751';
const WRITTEN = '00442071838751';
const SOURCES = ['192.0.2.10', '192.0.2.11', '192.0.2.12'];
const THEIR_SOURCE = '198.51.100.66';
/** A scanner whose probes named no number and no User-Agent, as a SentryPeer node writes them. */
const SCANNER = '192.0.2.99';
const SCANNED = '+15550100999';
/** Outside the overview's week, so its charts count only the events above. */
const LONG_AGO = `${new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10)} 09:00:00`;
/** Yesterday at 14:30 UTC: inside the overview's week, in one known hour of one known weekday. */
const YESTERDAY = new Date(Date.now() - 86_400_000);
const AT = `${YESTERDAY.toISOString().slice(0, 10)} 14:30:00`;
const WEEKDAY = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][YESTERDAY.getUTCDay()];

/**
 * Drill-down: a page for a number and for an address, linked from every
 * number and address the dashboard shows, with the lookup's answer, the account's own events of
 * it, its activity and what it is paired with; the lookup itself is a GET, so it has a URL.
 */
describe('number and address pages (docs/dashboard.md, "Drill-down")', () => {
  let h: Harness;
  let a: TestAccount;
  let b: TestAccount;
  let page: WebClient;

  beforeAll(async () => {
    h = await startHarness();
    a = await h.account();
    b = await h.account();
    ({ browser: page } = await signedIn(h, a.account.account_id));
    for (const [i, source] of SOURCES.entries()) {
      for (let n = 0; n <= i; n++) expect((await postEvent(a, sampleEvent({ called_number: WRITTEN, source_ip: source, event_timestamp: AT }))).status).toBe(201);
    }
    for (let n = 0; n < 4; n++) expect((await postEvent(a, sampleEvent({ called_number: 'NOT_FOUND', sip_user_agent: 'NOT_FOUND', source_ip: SCANNER, event_timestamp: LONG_AGO }))).status).toBe(201);
    expect((await postEvent(a, sampleEvent({ called_number: SCANNED, source_ip: SCANNER, event_timestamp: LONG_AGO }))).status).toBe(201);
    // Another account's event of the same number: never on this account's pages.
    expect((await postEvent(b, sampleEvent({ called_number: WRITTEN, source_ip: THEIR_SOURCE }))).status).toBe(201);
    await h.settled();
  });
  afterAll(() => h?.close());

  it('links every number and address of the events table, an event and the overview’s charts', async () => {
    const events = (await page.get('/events')).text;
    // Shown in its one form (its key) everywhere but the event's own fields, the form dialled in its tooltip.
    expect(events).toContain(`<a href="/numbers/${encodeURIComponent(NUMBER)}" title="dialled as ${WRITTEN}">${NUMBER}</a>`);
    expect(events).toContain('<a href="/addresses/192.0.2.12">192.0.2.12</a>');
    const uuid = /href="\/events\/([0-9a-f-]{36})"/.exec(events)![1]!;
    const event = (await page.get(`/events/${uuid}`)).text;
    expect(event).toContain(`<a href="/numbers/${encodeURIComponent(NUMBER)}" title="${NUMBER}">${WRITTEN}</a>`);
    // Its fields in words, each with its name in the API beside it; its node and destination lead on.
    expect(event).toMatch(/<dt>Node <code class="field-name">created_by_node_id<\/code><\/dt><dd><a href="\/events\?node_id=[0-9a-f-]{36}" title="This node’s events">/);
    expect(event).toMatch(/<dt>Destination \(the honeypot\) <code class="field-name">destination_ip<\/code><\/dt><dd><a href="\/addresses\/[^"]+">/);
    const overview = (await page.get('/overview')).text;
    // Each bar a link named once, for a screen reader, inside a named group rather than an image.
    expect(overview).toContain(`<a href="/numbers/${encodeURIComponent(NUMBER)}" aria-label="${NUMBER}: 6 events"><g><title>${NUMBER}: 6</title>`);
    expect(overview).toContain('<a href="/addresses/192.0.2.12" aria-label="192.0.2.12: 3 events"><g><title>192.0.2.12: 3</title>');
    expect(overview).toContain('<svg role="group" aria-label="Top called numbers"');
    expect(overview).toContain('<svg role="img" aria-label="SIP methods"');
    // The week of hours counts the six events in their hour, and its table says the same.
    expect(overview).toContain(`<title>${WEEKDAY} 14:00–15:00 UTC: 6 events</title>`);
    // Its legend says what the darkest shade means.
    expect(overview).toMatch(/<g class="legend">.*6 events in an hour<\/text><\/g>/);
    expect(overview).toMatch(new RegExp(`<tr><th scope="row">${WEEKDAY}</th>(<td>0</td>){14}<td>6</td>(<td>0</td>){9}</tr>`));
    // Every chart's numbers are there as a table too, its values linked like its bars.
    expect(overview).toContain(`<th scope="row"><a href="/numbers/${encodeURIComponent(NUMBER)}">${NUMBER}</a></th><td>6</td>`);
  });

  it('shows a number: the lookup’s answer, its own events, per day, and the addresses that dialled it, linked on', async () => {
    const res = await page.get(`/numbers/${encodeURIComponent(WRITTEN)}`);
    expect(res.status).toBe(200);
    const api = (await (await a.api(`/api/phone-numbers/${encodeURIComponent(WRITTEN)}`)).json()) as { score: number; seen_count: number };
    expect(res.text).toContain('<strong>SEEN</strong>');
    expect(res.text).toContain(`${api.score} of 100</h2>`);
    expect(res.text).toContain(`<dd>${api.seen_count} times</dd>`);
    // Most-dialling source first, each bar a link to its address page.
    const bars = [...res.text.matchAll(/<a href="\/addresses\/([^"]+)" aria-label="[^"]+"><g><title>[^:]+: (\d+)<\/title>/g)].map((m) => [m[1], Number(m[2])]);
    expect(bars).toEqual([['192.0.2.12', 3], ['192.0.2.11', 2], ['192.0.2.10', 1]]);
    // One caption, one pair of brackets; the day axis in words, not an ISO timestamp.
    expect(res.text).toContain('<figcaption>Its events per day, this account’s own (UTC; at most 6 events in a day)</figcaption>');
    const day = `${YESTERDAY.getUTCDate()} ${YESTERDAY.toLocaleString('en', { month: 'short', timeZone: 'UTC' })}`;
    expect(res.text).toContain(`>${day}</text>`);
    expect(res.text).not.toMatch(/<text[^>]*>\d{4}-\d{2}-\d{2}/);
    expect(res.text).toContain('all 6 of this account’s own events');
    expect(res.text).not.toContain(THEIR_SOURCE);
  });

  it('shows an address at its canonical URL, with the numbers it dialled', async () => {
    const res = await page.get('/addresses/192.0.2.12');
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<a href="/numbers/${encodeURIComponent(NUMBER)}" aria-label="${NUMBER}: 3 events"><g><title>${NUMBER}: 3</title>`);
    const other = await page.get('/addresses/2001:0db8:0000:0000:0000:0000:0000:0007');
    expect(other.status).toBe(301);
    expect(other.location).toBe(`/addresses/${encodeURIComponent('2001:db8::7')}`);
    expect((await page.get('/addresses/not-an-address')).status).toBe(404);
    expect((await page.get('/numbers/not%20a%20number!')).status).toBe(404);
  });

  it('shows what a node’s NOT_FOUND means, never as a number: no bar, no link, no count', async () => {
    const res = await page.get(`/addresses/${SCANNER}`);
    expect(res.status).toBe(200);
    // Its only chartable number is the one it really dialled, once; the four numberless probes are no bar.
    const bars = [...res.text.matchAll(/<a href="\/numbers\/([^"]+)" aria-label="[^"]+"><g><title>([^<]+)<\/title>/g)].map((m) => m[2]);
    expect(bars).toEqual([`${SCANNED}: 1`]);
    expect(res.text).not.toContain('/numbers/NOT_FOUND');
    // The events table says what the marker means, and shows what was sent on hover.
    expect(res.text).toContain('<span class="absent" title="sent as NOT_FOUND">no number</span>');
    expect(res.text).toContain('<span class="absent" title="sent as NOT_FOUND">none sent</span>');
    const events = (await page.get(`/events?source_ip=${SCANNER}`)).text;
    expect(events).not.toContain('>NOT_FOUND<');
    expect(events).toContain('<span class="absent" title="sent as NOT_FOUND">no number</span>');
    const uuid = [...events.matchAll(/href="\/events\/([0-9a-f-]{36})[?"]/g)].map((m) => m[1]!);
    expect(uuid).toHaveLength(5);
    const details = await Promise.all(uuid.map(async (u) => (await page.get(`/events/${u}`)).text));
    const numberless = details.find((d) => d.includes('no number'))!;
    expect(numberless).toContain('<dt>Called number <code class="field-name">called_number</code></dt><dd><span class="absent" title="sent as NOT_FOUND">no number</span></dd>');
    expect(numberless).toContain('<dt>User agent <code class="field-name">sip_user_agent</code></dt><dd><span class="absent" title="sent as NOT_FOUND">none sent</span></dd>');
  });

  it('answers the lookup form at a URL of its own, leading on to the page', async () => {
    const res = await page.get(`/lookup?q=${encodeURIComponent(WRITTEN)}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<a href="/numbers/${encodeURIComponent(WRITTEN)}">Everything about ${WRITTEN}`);
    expect(res.text).toContain('<form method="get" action="/lookup"');
  });

  it('says what to do next where there is nothing to chart', async () => {
    const fresh = await h.account();
    const { browser } = await signedIn(h, fresh.account.account_id);
    const empty = await browser.get('/overview');
    expect(empty.text).toContain('No events of this account’s own in the last 7 days. To send some:');
    expect(empty.text).toContain('<a href="/settings/clients">the clients page</a>');
    expect((await page.get('/overview')).text).not.toContain('To send some:');
  });

  it('spends a lookup for each page, as the lookup page does', async () => {
    const plan = (await h.services.plans.find('contributor'))!;
    const before = (await h.services.limiter.usage('lookups', a.account.account_id, plan.lookups)).used;
    await page.get(`/numbers/${encodeURIComponent(NUMBER)}`);
    await page.get('/addresses/192.0.2.10');
    expect((await h.services.limiter.usage('lookups', a.account.account_id, plan.lookups)).used).toBe(before + 2);
  });
});

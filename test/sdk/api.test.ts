import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollwatchError, type HoneypotEvent } from '../../sdk/src/index.ts';
import { startAnsweringProxy } from '../support/answering-proxy.ts';
import { saveUnlimitedPlan, startHarness, type Harness } from '../support/harness.ts';
import { sdkEvent, sdkFor } from './sdk-client.ts';

const event = sdkEvent;

/** The SDK's operations against a real server, over real HTTP (docs/api.md §4–§8). */
describe('SDK operations', () => {
  let h: Harness;
  let unlimited: string;

  beforeAll(async () => {
    h = await startHarness();
    unlimited = await saveUnlimitedPlan(h);
  });
  afterAll(() => h?.close());

  it('submits an event, and the same event again as a replay: both succeed, one is stored', async () => {
    const { client } = sdkFor(h, await h.account());
    const e = event({ called_number: '+441632960123' });
    const first = await client.submitEvent(e);
    expect(first).toMatchObject({ status: 'created', message: expect.any(String), location: `/api/events/${e.event_uuid}` });
    expect(first.rateLimit).toMatchObject({ policy: 'submissions', quota: 100_000, windowSeconds: 3600 });
    expect(await client.submitEvent(e)).toMatchObject({ status: 'replayed' });
    const pages = [];
    for await (const page of client.listEvents()) pages.push(page);
    expect(pages.flatMap((p) => p.data).map((s) => s.event_uuid)).toEqual([e.event_uuid]);
    expect(await client.getEvent(e.event_uuid.toUpperCase())).toMatchObject({ event_uuid: e.event_uuid, called_number: '+441632960123' });
    expect(await client.getEvent(crypto.randomUUID())).toBeNull();
  });

  it('looks numbers and addresses up: found, and not found as a normal result', async () => {
    const { client } = sdkFor(h, await h.account());
    await client.submitEvent(event({ called_number: '0046812118599', source_ip: '203.0.113.99' }));
    const found = await client.lookupPhoneNumber('+46812118599');
    expect(found).toMatchObject({ found: true, phone_number: '+46812118599', seen_count: 1, matched_forms: ['0046812118599'] });
    expect(found.rateLimit).toMatchObject({ policy: 'lookups', quota: 3600, windowSeconds: 3600 });
    // The allowance is not part of the answer's JSON.
    expect(JSON.parse(JSON.stringify(found))).not.toHaveProperty('rateLimit');
    expect(await client.lookupPhoneNumber('tel:+46 8 121 185 00')).toMatchObject({ found: false, phone_number: '+46812118500' });
    expect(await client.lookupIpAddress('203.0.113.99')).toMatchObject({ found: true, seen_count: 1 });
    expect(await client.lookupIpAddress('::ffff:203.0.113.98')).toMatchObject({ found: false });
  });

  it('submits large arrays in batches of 1,000, with each result’s index in the array given', async () => {
    const proxy = await startAnsweringProxy(h.url, () => 'forward');
    try {
      const { client } = sdkFor(proxy, await h.account({ plan: unlimited }));
      const events = Array.from({ length: 2_300 }, () => event());
      const stored = events[10]!;
      events[2_100] = { ...events[2_100]!, transport_type: 'SCTP' } as unknown as HoneypotEvent;
      events[2_200] = { ...stored, sip_message: 'different' };
      const result = await client.submitEvents(events);
      expect(result).toMatchObject({ created: 2_298, replayed: 0, conflict: 1, invalid: 1 });
      expect(result.results).toHaveLength(2_300);
      expect(result.results.map((r) => r.index)).toEqual(events.map((_, i) => i));
      expect(result.results[2_100]).toMatchObject({ status: 'invalid', errors: [{ field: 'transport_type' }] });
      expect(result.results[2_200]).toMatchObject({ status: 'conflict', event_uuid: stored.event_uuid });
      expect(result.rateLimit).toMatchObject({ policy: 'submissions' });
      expect(proxy.requests.filter((r) => r.path === '/api/events/batch').map((r) => (JSON.parse(r.body) as unknown[]).length)).toEqual([1000, 1000, 300]);
      // Sent again: every stored event is a replay.
      const again = await client.submitEvents(events.slice(0, 1_500));
      expect(again).toMatchObject({ created: 0, replayed: 1_500 });
      expect(await client.submitEvents([])).toEqual({ results: [], created: 0, replayed: 0, conflict: 0, invalid: 0 });
    } finally {
      await proxy.close();
    }
  });

  it('splits batches by size too: no request over 16 MiB', async () => {
    const proxy = await startAnsweringProxy(h.url, () => 'forward');
    try {
      const { client } = sdkFor(proxy, await h.account({ plan: unlimited }));
      // 300 events of a 64 KiB SIP message: about 19 MiB in all.
      const big = 'INVITE sip:1@192.0.2.1 SIP/2.0\r\n'.padEnd(65_000, 'x');
      const result = await client.submitEvents(Array.from({ length: 300 }, () => event({ sip_message: big })));
      expect(result.created).toBe(300);
      const sizes = proxy.requests.filter((r) => r.path === '/api/events/batch').map((r) => Buffer.byteLength(r.body));
      expect(sizes.length).toBe(2);
      for (const size of sizes) expect(size).toBeLessThanOrEqual(16 * 1024 * 1024);
    } finally {
      await proxy.close();
    }
  });

  it('looks up in bulk, 1,000 values a request, one result per value in order', async () => {
    const { client } = sdkFor(h, await h.account({ plan: unlimited }));
    await client.submitEvent(event({ called_number: '+15550177', source_ip: '198.51.100.77' }));
    const numbers = Array.from({ length: 1_200 }, (_, i) => `+1555${String(i).padStart(4, '0')}`);
    numbers[5] = 'not a number!';
    const results = await client.lookupPhoneNumbers(numbers);
    expect(results).toHaveLength(1_200);
    expect(results[5]).toMatchObject({ input: 'not a number!', error: 'invalid_phone_number' });
    expect(results[177]).toMatchObject({ found: true, phone_number: '+15550177' });
    expect(results[178]).toMatchObject({ found: false });
    expect(results.rateLimit).toMatchObject({ policy: 'lookups' });
    expect(await client.lookupIpAddresses(['198.51.100.77', '198.51.100.78', '300.1.1.1'])).toMatchObject([
      { found: true, ip_address: '198.51.100.77' },
      { found: false },
      { error: 'invalid_ip_address' },
    ]);
    expect(await client.lookupIpAddresses([])).toEqual([]);
  });

  it('pages through events with next_cursor, newest first, filters applied', async () => {
    const { client } = sdkFor(h, await h.account());
    const events = Array.from({ length: 25 }, (_, i) => event({ event_timestamp: `2026-11-20 10:00:${String(i).padStart(2, '0')}`, transport_type: i % 5 === 0 ? 'TLS' : 'UDP' }));
    await client.submitEvents(events);
    const sizes: number[] = [];
    const seen: string[] = [];
    for await (const page of client.listEvents({ limit: 10 })) {
      sizes.push(page.data.length);
      seen.push(...page.data.map((e) => e.event_uuid));
    }
    expect(sizes).toEqual([10, 10, 5]);
    expect(seen).toEqual(events.map((e) => e.event_uuid).reverse());
    const tls = [];
    for await (const page of client.listEvents({ transport_type: 'TLS', limit: 2 })) tls.push(...page.data);
    expect(tls.map((e) => e.transport_type)).toEqual(['TLS', 'TLS', 'TLS', 'TLS', 'TLS']);
    const first = await client.listEventsPage({ limit: 20 });
    const rest = await client.listEventsPage({ limit: 20, cursor: first.next_cursor! });
    expect(rest).toMatchObject({ next_cursor: null });
    expect(rest.data).toHaveLength(5);
  });

  it('throws TollwatchError carrying the problem document', async () => {
    const { client } = sdkFor(h, await h.account());
    const invalid = await client.submitEvent(event({ event_uuid: 'nope', transport_type: 'SCTP' })).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(TollwatchError);
    expect(invalid).toMatchObject({
      status: 422,
      error: 'validation_failed',
      title: expect.any(String),
      detail: expect.any(String),
      type: 'http://tollwatch.test/problems#validation_failed',
      errors: expect.arrayContaining([expect.objectContaining({ field: 'event_uuid' }), expect.objectContaining({ field: 'transport_type' })]),
    });
    expect((invalid as TollwatchError).problem).toMatchObject({ status: 422, error: 'validation_failed' });

    const stored = event();
    await client.submitEvent(stored);
    await expect(client.submitEvent({ ...stored, sip_message: 'other' })).rejects.toMatchObject({ status: 409, error: 'duplicate_event' });
    await expect(client.lookupPhoneNumber('not a number!')).rejects.toMatchObject({ status: 400, error: 'invalid_phone_number' });
    await expect(client.lookupIpAddress('300.1.1.1')).rejects.toMatchObject({ status: 400, error: 'invalid_ip_address' });
    await expect(client.listEventsPage({ limit: 0 })).rejects.toMatchObject({ status: 422, errors: [{ field: 'limit' }] });

    const business = sdkFor(h, await h.account({ plan: 'business', permissions: ['write:events'] })).client;
    await expect(business.submitEvent(event())).rejects.toMatchObject({ name: 'TollwatchError', status: 403, error: 'plan_not_allowed' });
    const narrow = sdkFor(h, await h.account({ permissions: ['read:phone-numbers'] })).client;
    await expect(narrow.lookupIpAddress('192.0.2.1')).rejects.toMatchObject({ status: 403, error: 'insufficient_scope' });
  });

  it('reports an answer that is not a problem document by its status', async () => {
    const proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? { status: 500, headers: { 'content-type': 'text/html' }, body: '<h1>oops</h1>' } : 'forward'));
    try {
      const error = await sdkFor(proxy, await h.account()).client.lookupIpAddress('192.0.2.1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TollwatchError);
      expect(error).toMatchObject({ status: 500, error: 'unexpected_response', problem: undefined });
    } finally {
      await proxy.close();
    }
  });
});

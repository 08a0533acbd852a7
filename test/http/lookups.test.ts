import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, SAMPLE_DAY, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

describe('lookups (docs/api.md §7)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let caller: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    // The service's own fleet: a trusted account whose events form the shared data set.
    fleet = await h.account({ trusted: true });
    caller = await h.account({ plan: 'contributor', permissions: ['read:phone-numbers', 'read:ip-addresses'] });
    const events = [
      sampleEvent({ called_number: '0046812118532', source_ip: '203.0.113.7', sip_method: 'INVITE', event_timestamp: '2026-11-20 08:00:00.5' }),
      sampleEvent({ called_number: '+46812118532', source_ip: '203.0.113.8', sip_method: 'INVITE', event_timestamp: '2026-11-21 09:00:00.123456789' }),
      sampleEvent({ called_number: '01146812118532', source_ip: '203.0.113.7', sip_method: 'OPTIONS', event_timestamp: '2026-11-19 07:00:00' }),
      sampleEvent({ called_number: '0046812118532', source_ip: '2001:db8::7', sip_method: 'INVITE', transport_type: 'TCP', sip_user_agent: 'sipvicious' }),
      sampleEvent({ called_number: '100', source_ip: '203.0.113.7', sip_method: 'REGISTER' }),
      sampleEvent({ called_number: '+448712345678', source_ip: '203.0.113.9' }),
    ];
    for (const event of events) expect((await postEvent(fleet, event)).status).toBe(201);
    // The caller reads what another account stored: once folded in (docs/api.md §7).
    await h.settled();
  });
  afterAll(() => h?.close());

  const number = (value: string, who = caller) => who.api(`/api/phone-numbers/${encodeURIComponent(value)}`);

  it('finds a number under every international-prefix form and says which forms were seen', async () => {
    for (const form of ['+46812118532', '0046812118532', '01146812118532', '+46 8 121 185 32', '+46-8-(121)-185.32', 'tel:+46812118532', 'sip:0046812118532@198.51.100.2;user=phone', ' +46812118532 ']) {
      const res = await number(form);
      expect(res.status, form).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        found: true,
        seen_count: 4,
        first_seen: '2026-11-19T07:00:00.000000000Z',
        last_seen: expect.stringMatching(new RegExp(`^${SAMPLE_DAY}T10:00:\\d{2}\\.123456789Z$`)),
        source_ip_count: 3,
        sip_methods: { INVITE: 3, OPTIONS: 1 },
        e164: '+46812118532',
        country: 'SE',
        message: expect.any(String),
      });
      expect([...(body.matched_forms as string[])].sort()).toEqual(['+46812118532', '0046812118532', '01146812118532']);
    }
  });

  it('counts a called number written with URI parameters as the number, and keeps the event as sent', async () => {
    const writer = await h.account();
    const written = '+442071838001;phone-context=example.com';
    const event = sampleEvent({ called_number: written });
    expect((await postEvent(writer, event)).status).toBe(201);
    expect(((await (await writer.api(`/api/events/${event.event_uuid}`)).json()) as { called_number: string }).called_number).toBe(written);
    for (const form of ['+442071838001', written, '00442071838001;npdi', 'sip:+442071838001;user=phone@example.com']) {
      const res = await number(form, writer);
      expect(res.status, form).toBe(200);
      expect(await res.json(), form).toMatchObject({ found: true, seen_count: 1, matched_forms: ['+442071838001'] });
    }
  });

  it('keeps nanoseconds and picks the true first and last sighting', async () => {
    const body = (await (await number('+46812118532')).json()) as { first_seen: string; last_seen: string };
    expect(body.first_seen).toBe('2026-11-19T07:00:00.000000000Z');
    expect(body.last_seen > '2026-11-21T09:00:00.123456789Z').toBe(true);
  });

  it('gives the number type where the number parses as E.164', async () => {
    const body = (await (await number('+448712345678')).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ found: true, country: 'GB', number_type: 'premium-rate' });
    const short = (await (await number('100')).json()) as Record<string, unknown>;
    expect(short).toMatchObject({ found: true, seen_count: 1, matched_forms: ['100'] });
    expect(short).not.toHaveProperty('country');
  });

  it('404 found:false (not a problem document) for a number never seen', async () => {
    const res = await number('+15555550100');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({ phone_number: '+15555550100', found: false, message: expect.any(String) });
  });

  it('400 invalid_phone_number for what cannot be a number', async () => {
    for (const bad of ['abc$', '+', '1'.repeat(65), '++4612', 'sip:@host', '%', '☎']) {
      const res = await number(bad);
      expect(res.status, bad).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ error: 'invalid_phone_number', status: 400 });
    }
  });

  it('looks up a source address in any written form', async () => {
    const res = await caller.api('/api/ip-addresses/203.0.113.7');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      ip_address: '203.0.113.7',
      found: true,
      seen_count: 3,
      called_number_count: 2,
      transports: { UDP: 3 },
      user_agents: [{ user_agent: 'friendly-scanner', count: 3 }],
    });
    const v6 = await caller.api('/api/ip-addresses/2001:0DB8:0:0::7');
    expect(await v6.json()).toMatchObject({ ip_address: '2001:db8::7', found: true, transports: { TCP: 1 }, user_agents: [{ user_agent: 'sipvicious', count: 1 }] });
  });

  it('404 for an unseen address, 400 invalid_ip_address for a bad one', async () => {
    const res = await caller.api('/api/ip-addresses/192.0.2.200');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ ip_address: '192.0.2.200', found: false, message: expect.any(String) });
    for (const bad of ['256.0.0.1', '1.2.3', 'fe80::1%25eth0', 'example.com', '127.1', '01.2.3.4']) {
      const bad400 = await caller.api(`/api/ip-addresses/${bad}`);
      expect(bad400.status, bad).toBe(400);
      expect(await bad400.json()).toMatchObject({ error: 'invalid_ip_address' });
    }
  });

  it('answers from committed data, without waiting, while a transaction is open on the store', async () => {
    // What an aggregate rebuild does: empty the tables, then refill them, in one transaction.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let emptied!: () => void;
    const emptiedNow = new Promise<void>((resolve) => (emptied = resolve));
    const rebuild = h.services.database.db
      .transaction()
      .execute(async (trx) => {
        await trx.deleteFrom('number_aggregates').execute();
        emptied();
        await held;
        throw new Error('rolled back on purpose');
      })
      .catch(() => undefined);
    await emptiedNow;
    try {
      const res = await Promise.race([number('+46812118532'), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('lookup waited')), 3000))]);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ found: true, seen_count: 4 });
    } finally {
      release();
      await rebuild;
    }
  });
});

describe('who sees what (docs/api.md §6)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it("account B never sees account A's number, address or event, not even through the same uuid", async () => {
    const a = await h.account();
    const b = await h.account();
    const secret = sampleEvent({ called_number: '+972597744894', source_ip: '198.18.0.77' });
    expect((await postEvent(a, secret)).status).toBe(201);

    // A sees its own event in its lookups and queries.
    expect((await a.api('/api/phone-numbers/%2B972597744894')).status).toBe(200);
    expect((await a.api('/api/ip-addresses/198.18.0.77')).status).toBe(200);
    expect((await a.api(`/api/events/${secret.event_uuid}`)).status).toBe(200);

    // B sees nothing of it, and its 404 is exactly the one for a missing event.
    expect((await b.api('/api/phone-numbers/%2B972597744894')).status).toBe(404);
    expect((await b.api('/api/ip-addresses/198.18.0.77')).status).toBe(404);
    const foreign = await b.api(`/api/events/${secret.event_uuid}`);
    const missing = await b.api(`/api/events/${crypto.randomUUID()}`);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual(await missing.json());
    expect(((await (await b.api('/api/events')).json()) as { data: unknown[] }).data).toEqual([]);
    expect(((await (await b.api('/api/events?called_number=%2B972597744894')).json()) as { data: unknown[] }).data).toEqual([]);

    // B submitting the same uuid learns nothing: a fresh 201, and A's copy is untouched.
    expect((await postEvent(b, { ...secret, sip_method: 'OPTIONS' })).status).toBe(201);
    const mine = (await (await a.api(`/api/events/${secret.event_uuid}`)).json()) as { sip_method: string };
    expect(mine.sip_method).toBe('INVITE');
    const theirs = (await (await b.api(`/api/events/${secret.event_uuid}`)).json()) as { sip_method: string };
    expect(theirs.sip_method).toBe('OPTIONS');
    // Each now sees only its own count for that number.
    expect(((await (await a.api('/api/phone-numbers/%2B972597744894')).json()) as { sip_methods: unknown }).sip_methods).toEqual({ INVITE: 1 });
    expect(((await (await b.api('/api/phone-numbers/%2B972597744894')).json()) as { sip_methods: unknown }).sip_methods).toEqual({ OPTIONS: 1 });
  });

  it('everyone sees the shared data set; it merges with the caller’s own events without double counting', async () => {
    const fleet = await h.account({ trusted: true });
    const a = await h.account();
    const c = await h.account({ plan: 'business' });
    expect((await postEvent(fleet, sampleEvent({ called_number: '+3906622790160', source_ip: '198.18.1.1' }))).status).toBe(201);
    expect((await postEvent(a, sampleEvent({ called_number: '003906622790160', source_ip: '198.18.1.1', sip_method: 'OPTIONS' }))).status).toBe(201);
    expect((await postEvent(a, sampleEvent({ called_number: '+3906622790160', source_ip: '198.18.1.2' }))).status).toBe(201);

    const seenByA = (await (await a.api('/api/phone-numbers/%2B3906622790160')).json()) as Record<string, unknown>;
    expect(seenByA).toMatchObject({ seen_count: 3, source_ip_count: 2, sip_methods: { INVITE: 2, OPTIONS: 1 } });
    const seenByC = (await (await c.api('/api/phone-numbers/%2B3906622790160')).json()) as Record<string, unknown>;
    expect(seenByC).toMatchObject({ seen_count: 1, source_ip_count: 1, sip_methods: { INVITE: 1 }, matched_forms: ['+3906622790160'] });
    const ipByA = (await (await a.api('/api/ip-addresses/198.18.1.1')).json()) as Record<string, unknown>;
    expect(ipByA).toMatchObject({ seen_count: 2, called_number_count: 1 });
  });

  it("contributor events never enter the shared data set", async () => {
    const contributor = await h.account();
    const other = await h.account({ plan: 'service_provider' });
    expect((await postEvent(contributor, sampleEvent({ called_number: '+15005550006', source_ip: '198.18.2.2' }))).status).toBe(201);
    expect((await other.api('/api/phone-numbers/%2B15005550006')).status).toBe(404);
    expect((await other.api('/api/ip-addresses/198.18.2.2')).status).toBe(404);
  });

});

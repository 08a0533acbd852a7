import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUERY_PARAMETERS } from '../../src/domain/events/event-query.ts';
import { resolveKeySecret } from '../../src/store/maintenance/keys-at-rest.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { freshDatabase } from '../support/test-database.ts';

type Page = { data: Array<Record<string, string>>; next_cursor: string | null };

describe('querying one’s own events (docs/api.md §8)', () => {
  let h: Harness;
  let owner: TestAccount;
  const uuids: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    // 25 events, one per minute on 2026-11-20, alternating attributes for the filters.
    for (let i = 0; i < 25; i++) {
      const event = sampleEvent({
        event_timestamp: `2026-11-20 10:${String(i).padStart(2, '0')}:00.${String(i).padStart(9, '0')}`,
        called_number: i % 2 === 0 ? '0046812118532' : '+15005550006',
        source_ip: i % 3 === 0 ? '203.0.113.1' : '203.0.113.2',
        sip_method: i % 5 === 0 ? 'REGISTER' : 'INVITE',
        created_by_node_id: i < 10 ? '11111111-1111-4111-8111-111111111111' : '22222222-2222-4222-8222-222222222222',
        collected_method: i % 4 === 0 ? 'passive' : 'responsive',
        transport_type: i % 2 === 0 ? 'TCP' : 'UDP',
      });
      uuids.push(event.event_uuid as string);
      expect((await postEvent(owner, event)).status).toBe(201);
    }
  });
  afterAll(() => h?.close());

  const page = async (query: string): Promise<Page> => {
    const res = await owner.api(`/api/events${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Page;
  };

  it('returns the caller’s events newest first, 100 by default', async () => {
    const all = await page('');
    expect(all.data.map((e) => e.event_uuid)).toEqual([...uuids].reverse());
    expect(all.next_cursor).toBeNull();
    expect(all.data[0]).toHaveProperty('sip_message');
    expect(all.data[0]).toHaveProperty('event_time', '2026-11-20T10:24:00.000000024Z');
  });

  it('walks every event exactly once through the cursor, also while new events arrive', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let first = true;
    do {
      const p: Page = await page(`?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(p.data.length).toBeLessThanOrEqual(7);
      seen.push(...p.data.map((e) => e.event_uuid!));
      cursor = p.next_cursor;
      if (first) {
        // A newer event arriving mid-walk must not shift later pages.
        first = false;
        expect((await postEvent(owner, sampleEvent({ event_timestamp: '2026-11-21 00:00:00', called_number: '999' }))).status).toBe(201);
      }
    } while (cursor);
    expect(seen).toEqual([...uuids].reverse());
  });

  it('filters by every field of the contract', async () => {
    const range = await page('?since=2026-11-20T10:05:00Z&until=2026-11-20%2010:10:00');
    expect(range.data.map((e) => e.event_uuid)).toEqual(uuids.slice(5, 10).reverse());
    expect((await page('?called_number=%2B46812118532')).data).toHaveLength(13);
    expect((await page('?called_number=01146812118532')).data).toHaveLength(13);
    expect((await page('?source_ip=203.0.113.1')).data).toHaveLength(9);
    expect((await page('?sip_method=REGISTER')).data).toHaveLength(5);
    expect((await page('?node_id=11111111-1111-4111-8111-111111111111')).data).toHaveLength(10);
    expect((await page('?collected_method=passive')).data).toHaveLength(7);
    expect((await page('?transport_type=TCP&sip_method=REGISTER')).data.map((e) => e.event_uuid)).toEqual([uuids[20], uuids[10], uuids[0]]);
  });

  it('422 validation_failed naming each bad parameter', async () => {
    const res = await owner.api('/api/events?limit=1001&since=yesterday&source_ip=nope&cursor=garbage&node_id=x');
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: string; errors: Array<{ field: string }> };
    expect(body.error).toBe('validation_failed');
    expect(body.errors.map((e) => e.field)).toEqual(['since', 'source_ip', 'node_id', 'limit', 'cursor']);
    const semantic = await owner.api('/api/events?since=yesterday&source_ip=nope&cursor=garbage&node_id=x&sip_method=%24');
    const fields = ((await semantic.json()) as { errors: Array<{ field: string }> }).errors.map((e) => e.field);
    expect(fields).toEqual(['since', 'source_ip', 'sip_method', 'node_id', 'cursor']);
    for (const bad of ['?limit=0', '?limit=abc', '?transport_type=SCTP', '?collected_method=all', '?unknown=1', '?sip_method=%00', '?sip_method=IN%20VITE']) {
      expect((await owner.api(`/api/events${bad}`)).status, bad).toBe(422);
    }
  });

  it('names every bad parameter in one pass, each by its own name with one clear message', async () => {
    const res = await owner.api('/api/events?collected_method=x&transport_type=y&node_id=z&limit=0&since=bad&colour=red&sip_method=IN%20VITE');
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const body = (await res.json()) as { error: string; errors: Array<{ field: string; message: string }> };
    expect(body.error).toBe('validation_failed');
    expect(body.errors).toEqual([
      { field: 'since', message: 'must be YYYY-MM-DD HH:MM:SS with up to 9 fractional digits, or RFC 3339' },
      { field: 'sip_method', message: 'must be a SIP method token of at most 32 characters' },
      { field: 'node_id', message: 'must be a UUID (8-4-4-4-12 hexadecimal digits)' },
      { field: 'collected_method', message: 'must be one of: responsive, passive' },
      { field: 'transport_type', message: 'must be one of: UDP, TCP, TLS' },
      { field: 'limit', message: 'must be an integer from 1 to 1000' },
      { field: 'colour', message: 'is not a known parameter' },
    ]);
  });

  it('refuses a repeated parameter, and a limit that is not plain digits', async () => {
    const errorsOf = async (query: string) => ((await (await owner.api(`/api/events${query}`)).json()) as { errors: Array<{ field: string; message: string }> }).errors;
    expect(await errorsOf('?limit=5&limit=6&sip_method=INVITE&sip_method=BYE')).toEqual([
      { field: 'sip_method', message: 'must be given once' },
      { field: 'limit', message: 'must be given once' },
    ]);
    for (const limit of ['1e2', '0x10', '%205', '5.0', '-1', '', '99999999999']) {
      expect(await errorsOf(`?limit=${limit}`), limit).toEqual([{ field: 'limit', message: 'must be an integer from 1 to 1000' }]);
    }
    expect(await errorsOf('?__proto__=1&constructor=2')).toEqual([
      { field: '__proto__', message: 'is not a known parameter' },
      { field: 'constructor', message: 'is not a known parameter' },
    ]);
    expect((await page('?limit=1000&collected_method=responsive&transport_type=UDP')).data.length).toBeGreaterThan(0);
  });

  it('issues opaque cursors that only the account they were made for can use', async () => {
    const first = await page('?limit=5');
    const cursor = first.next_cursor!;
    // Neither the event time nor the store's shared id sequence can be read from it.
    expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toMatch(/2026|\d{2}:\d{2}/);
    const refused = async (who: TestAccount, value: string) => {
      const res = await who.api(`/api/events?limit=5&cursor=${encodeURIComponent(value)}`);
      expect(res.status, value).toBe(422);
      const body = (await res.json()) as { error: string; errors: unknown };
      expect(body.error).toBe('validation_failed');
      expect(body.errors).toEqual([{ field: 'cursor', message: 'is not a cursor this service issued' }]);
    };
    // Another account: refused exactly as a malformed cursor, learning nothing.
    const other = await h.account();
    expect((await postEvent(other, sampleEvent())).status).toBe(201);
    await refused(other, cursor);
    // Altered, truncated, or forged in the old plain form.
    const bytes = Buffer.from(cursor, 'base64url');
    bytes[bytes.length >> 1]! ^= 0x01;
    await refused(owner, bytes.toString('base64url'));
    await refused(owner, cursor.slice(0, -2));
    const last = first.data.at(-1)!;
    await refused(owner, Buffer.from(JSON.stringify([last.event_time, 1e9])).toString('base64url'));
    // The owner goes on from it.
    const all = (await page('?limit=1000')).data.map((e) => e.event_uuid);
    const second = await page(`?limit=5&cursor=${cursor}`);
    expect(second.data.map((e) => e.event_uuid)).toEqual(all.slice(5, 10));
  });

  it('shares the cursor key through the store: another instance continues a walk, the key is 32 random bytes', async () => {
    const first = await page('?limit=4');
    const twin = await startHarness({ DATABASE_URL: h.config.databaseUrl });
    try {
      const token = await owner.token();
      const res = await fetch(`${twin.url}/api/events?limit=4&cursor=${first.next_cursor}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const second = (await res.json()) as Page;
      const all = (await page('?limit=1000')).data.map((e) => e.event_uuid);
      expect(second.data.map((e) => e.event_uuid)).toEqual(all.slice(4, 8));
    } finally {
      await twin.app.close();
      await twin.services.close();
    }
    const cursor = await h.services.database.db.selectFrom('server_secrets').selectAll().where('name', '=', 'cursor').executeTakeFirstOrThrow();
    // Sealed at rest (docs/operations.md, "Keys"); inside, 32 random bytes.
    const { sealer } = await resolveKeySecret(h.config.keySecret, h.config.databaseUrl, h.services.database);
    expect(Buffer.from(sealer.open(cursor.value, 'server_secrets/cursor'), 'base64')).toHaveLength(32);
  });

  it('documents its parameters in OpenAPI as it reads them', async () => {
    type Parameter = { name: string; in: string; required: boolean; schema: Record<string, unknown> };
    const doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters: Parameter[] }>> };
    const parameters = doc.paths['/api/events']!.get!.parameters;
    expect(parameters.map((p) => p.name)).toEqual([...QUERY_PARAMETERS]);
    expect(parameters.every((p) => p.in === 'query' && !p.required)).toBe(true);
    const schemaOf = (name: string) => parameters.find((p) => p.name === name)!.schema;
    expect(schemaOf('limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
    expect(schemaOf('collected_method')).toMatchObject({ enum: ['responsive', 'passive'] });
    expect(schemaOf('transport_type')).toMatchObject({ enum: ['UDP', 'TCP', 'TLS'] });
    expect(schemaOf('cursor')).not.toHaveProperty('maxLength');
  });

  it('one event by uuid, any case; 404 for any malformed or unknown uuid, whatever its length', async () => {
    expect((await owner.api(`/api/events/${uuids[3]!.toUpperCase()}`)).status).toBe(200);
    for (const id of ['not-a-uuid', crypto.randomUUID(), 'a'.repeat(100), 'a'.repeat(101), 'a'.repeat(512), '%F0%9F%98%80'.repeat(100), 'a'.repeat(513), 'a'.repeat(5000)]) {
      const res = await owner.api(`/api/events/${id}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'not_found' });
    }
  });
});

describe('a called number that names no number (docs/api.md §5, §8)', () => {
  let h: Harness;
  let owner: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
  });
  afterAll(() => h?.close());

  it('is an exact filter for every value an event can hold, and NOT_FOUND is never a number or a user agent', async () => {
    // What a real node sends when the probe lacked a field (test/fixtures/sentrypeer_json.log),
    // and values it sends that no lookup can read.
    const held = ['NOT_FOUND', 'test_user', '7'.repeat(70), '', '$', '+442071838001;phone-context=example.com'];
    for (const [i, called_number] of held.entries()) {
      const sip_user_agent = i % 2 === 0 ? 'NOT_FOUND' : i === 1 ? '' : 'friendly-scanner';
      expect((await postEvent(owner, sampleEvent({ called_number, sip_user_agent, source_ip: '198.51.100.40' }))).status).toBe(201);
    }
    for (const value of held) {
      const res = await owner.api(`/api/events?called_number=${encodeURIComponent(value)}`);
      expect(res.status, value).toBe(200);
      const { data } = (await res.json()) as Page;
      expect(data.map((e) => e.called_number), value).toEqual([value]);
    }
    // A number still matches every form it was written in, parameters and all.
    const number = (await (await owner.api('/api/events?called_number=00442071838001')).json()) as Page;
    expect(number.data.map((e) => e.called_number)).toEqual(['+442071838001;phone-context=example.com']);

    const marker = await owner.api('/api/phone-numbers/NOT_FOUND');
    expect(marker.status).toBe(400);
    expect(await marker.json()).toMatchObject({ error: 'invalid_phone_number', detail: expect.stringContaining('NOT_FOUND is what a honeypot node writes') });
    const address = (await (await owner.api('/api/ip-addresses/198.51.100.40')).json()) as { seen_count: number; called_number_count: number; user_agents: unknown };
    expect(address).toMatchObject({ seen_count: held.length, called_number_count: 1, user_agents: [{ user_agent: 'friendly-scanner', count: 2 }] });
  });
});

describe('reading one’s own events is metered (docs/api.md §8, §9)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('counts pages and single events against the plan’s own event-read allowance, then 429', async () => {
    await h.services.plans.save({
      name: 'few_reads',
      maySubmit: true,
      lookups: { limit: 100, windowSeconds: 60 },
      submissions: { limit: 100, windowSeconds: 60 },
      maxClients: null,
      eventReads: { limit: 3, windowSeconds: 60 },
    });
    const reader = await h.account({ plan: 'few_reads' });
    const event = sampleEvent();
    expect((await postEvent(reader, event)).status).toBe(201);
    const answers = [await reader.api('/api/events'), await reader.api(`/api/events/${event.event_uuid}`), await reader.api('/api/events?limit=1')];
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
    expect(answers[0]!.headers.get('ratelimit-policy')).toBe('"event_reads";q=3;w=60');
    const refused = await reader.api('/api/events');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(await refused.json()).toMatchObject({ error: 'rate_limited' });
    // Its own allowance: lookups and submissions are untouched.
    expect((await reader.api('/api/phone-numbers/100')).status).toBe(404);
    expect((await postEvent(reader, sampleEvent())).status).toBe(201);
  });

  it('ends a page early once it holds about 4 MiB, and the cursor carries on from there', async () => {
    const owner = await h.account();
    // 100 events of 60,000 characters: 6 MB, more than one page may carry.
    const events = Array.from({ length: 100 }, () => sampleEvent({ sip_message: `INVITE sip:100@198.51.100.2 SIP/2.0\r\n${'x'.repeat(60_000)}` }));
    const stored = await owner.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(((await stored.json()) as { created: number }).created).toBe(100);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await owner.api(`/api/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      const body = await res.text();
      sizes.push(Buffer.byteLength(body));
      const page = JSON.parse(body) as Page;
      seen.push(...page.data.map((e) => e.event_uuid!));
      cursor = page.next_cursor;
    }
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThan(4.5 * 1024 * 1024);
    expect(new Set(seen).size).toBe(100);
    expect(seen.sort()).toEqual(events.map((e) => e.event_uuid as string).sort());
  });
});

describe('the cursor key, made while instances start together', () => {
  it('is one key for every instance of a fresh store', async () => {
    const store = await freshDatabase();
    // Both migrate the empty store at once: Kysely's lock (PostgreSQL) or a retried, idempotent
    // migration (SQLite) must leave them with the same key.
    const [a, b] = await Promise.all([startHarness({ DATABASE_URL: store.url }), startHarness({ DATABASE_URL: store.url })]);
    try {
      const who = await a.account();
      for (let i = 0; i < 3; i++) expect((await postEvent(who, sampleEvent())).status).toBe(201);
      const token = await who.token();
      const get = async (on: Harness, query: string) => {
        const res = await fetch(`${on.url}/api/events${query}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, await res.clone().text()).toBe(200);
        return (await res.json()) as Page;
      };
      const fromA = await get(a, '?limit=1');
      const fromB = await get(b, '?limit=1');
      expect((await get(b, `?limit=1&cursor=${fromA.next_cursor}`)).data).toHaveLength(1);
      expect((await get(a, `?limit=1&cursor=${fromB.next_cursor}`)).data).toHaveLength(1);
    } finally {
      for (const h of [b, a]) {
        await h.app.close();
        await h.services.close();
      }
      await store.drop();
    }
  });
});

describe('a range of source addresses (docs/api.md §8)', () => {
  let h: Harness;
  let owner: TestAccount;
  const SOURCES = ['198.51.100.5', '198.51.101.9', '198.51.104.1', '198.51.1.77', '10.0.0.1', '2001:db8::5', '2001:db8:1::9', '2001:db9::1', '::ffff:198.51.100.6'];

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    for (const [i, source_ip] of SOURCES.entries()) {
      expect((await postEvent(owner, sampleEvent({ source_ip, event_timestamp: `2026-11-21 10:00:${String(10 + i).padStart(2, '0')}` }))).status).toBe(201);
    }
  });
  afterAll(() => h?.close());

  const sources = async (range: string, limit = 100) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await owner.api(`/api/events?${new URLSearchParams({ source_ip: range, limit: String(limit), ...(cursor ? { cursor } : {}) }).toString()}`);
      expect(res.status, range).toBe(200);
      const body = (await res.json()) as { data: Array<{ source_ip: string }>; next_cursor: string | null };
      seen.push(...body.data.map((e) => e.source_ip));
      cursor = body.next_cursor;
    } while (cursor);
    return seen;
  };

  it('keeps the addresses in the range, newest first, and only them', async () => {
    // ::ffff:198.51.100.6 is stored as the IPv4 address it maps, and found as one.
    expect(await sources('198.51.100.0/22')).toEqual(['198.51.100.6', '198.51.101.9', '198.51.100.5']);
    // Host bits set are the same range; a /32 is the one address.
    expect(await sources('198.51.101.200/22')).toEqual(['198.51.100.6', '198.51.101.9', '198.51.100.5']);
    expect(await sources('198.51.0.0/16')).toEqual(['198.51.100.6', '198.51.1.77', '198.51.104.1', '198.51.101.9', '198.51.100.5']);
    expect(await sources('10.0.0.1/32')).toEqual(['10.0.0.1']);
    expect(await sources('2001:db8::/32')).toEqual(['2001:db8:1::9', '2001:db8::5']);
    expect(await sources('2001:db8::/48')).toEqual(['2001:db8::5']);
    // Each range matches the addresses of its own family, as they are stored (newest first).
    const stored = ((await (await owner.api('/api/events')).json()) as { data: Array<{ source_ip: string }> }).data.map((e) => e.source_ip);
    expect(await sources('0.0.0.0/0')).toEqual(stored.filter((s) => !s.includes(':')));
    expect(await sources('::/0')).toEqual(stored.filter((s) => s.includes(':')));
  });

  it('walks a range a page at a time, every match once', async () => {
    expect(await sources('198.51.0.0/16', 1)).toEqual(['198.51.100.6', '198.51.1.77', '198.51.104.1', '198.51.101.9', '198.51.100.5']);
  });

  it('refuses what is no range, in words', async () => {
    for (const bad of ['198.51.100.0/33', '198.51.100/24', 'abc/8', '2001:db8::/129', '198.51.100.0/', '198.51.100.0/08x']) {
      const res = await owner.api(`/api/events?source_ip=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(422);
      expect(await res.json()).toMatchObject({ errors: [{ field: 'source_ip', message: expect.stringContaining('CIDR notation') }] });
    }
  });
});

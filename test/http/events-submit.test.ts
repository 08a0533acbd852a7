import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FIELDS } from '../../src/domain/events/event-fields.ts';
import { postEvent, SAMPLE_DAY, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

async function expectProblem(res: Response, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, error, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|node_modules|SQLITE|select |insert /i);
  return body as { errors?: Array<{ field: string; message: string }> };
}

describe('POST /api/events (docs/api.md §5)', () => {
  let h: Harness;
  let owner: TestAccount;

  const count = async (who: TestAccount) => (await h.services.eventQuery.list(who.account, { limit: 1000 })).data.length;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
  });
  afterAll(() => h?.close());

  it('201 with a thanks message and a Location, once committed', async () => {
    const event = sampleEvent();
    const res = await postEvent(owner, event);
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/events/${event.event_uuid}`);
    expect(res.headers.get('api-version')).toBe('1');
    expect(await res.json()).toEqual({ message: expect.any(String) });
    const stored = await owner.api(`/api/events/${event.event_uuid}`);
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ ...event, event_time: `${SAMPLE_DAY}T10:00:` + String(event.event_timestamp).slice(17, 19) + '.123456789Z' });
  });

  it('accepts the JSON body with no content type, text/plain and form-urlencoded (curl -d)', async () => {
    for (const contentType of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8']) {
      const event = sampleEvent();
      const headers: Record<string, string> = { authorization: `Bearer ${await owner.token()}` };
      if (contentType) headers['content-type'] = contentType;
      const res = await fetch(`${h.url}/api/events`, { method: 'POST', headers, body: Buffer.from(JSON.stringify(event)) });
      expect(res.status, String(contentType)).toBe(201);
    }
  });

  it('documents in OpenAPI every media type the event routes read', async () => {
    type Body = { content: Record<string, { schema: Record<string, unknown> }> };
    const doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody: Body; description: string }>>;
      components: { schemas: Record<string, Record<string, unknown>> };
    };
    const single = doc.paths['/api/events']!.post!;
    expect(Object.keys(single.requestBody.content)).toEqual(['application/json', 'text/plain', 'application/x-www-form-urlencoded']);
    for (const { schema } of Object.values(single.requestBody.content)) expect(schema).toEqual({ $ref: '#/components/schemas/HoneypotEvent' });
    expect(single.description).toContain('no Content-Type');
    const batch = doc.paths['/api/events/batch']!.post!;
    expect(Object.keys(batch.requestBody.content)).toEqual(['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/x-ndjson']);
    expect(batch.requestBody.content['application/json']!.schema).toEqual({ $ref: '#/components/schemas/EventBatch' });
    expect(doc.components.schemas.EventBatch).toMatchObject({ type: 'array', maxItems: 1000 });
    expect(batch.requestBody.content['application/x-ndjson']!.schema).toEqual({ $ref: '#/components/schemas/EventBatchNdjson' });
    expect(doc.components.schemas.EventBatchNdjson).toMatchObject({ type: 'string' });
  });

  it('415 for other media types, nothing stored', async () => {
    const before = await count(owner);
    for (const contentType of ['application/xml', 'multipart/form-data; boundary=x', 'application/x-ndjson', 'image/png']) {
      const res = await postEvent(owner, sampleEvent(), { 'content-type': contentType });
      await expectProblem(res, 415, 'unsupported_media_type');
    }
    expect(await count(owner)).toBe(before);
  });

  it('400 for malformed JSON and an empty body', async () => {
    await expectProblem(await postEvent(owner, '{"app_name": "x",'), 400, 'invalid_json');
    await expectProblem(await postEvent(owner, ''), 400, 'invalid_json');
  });

  it('ignores __proto__ and constructor.prototype keys like any unknown field: 201, none of it stored', async () => {
    const extras = [
      '"__proto__":"x"',
      '"__proto__":{}',
      '"__proto__":{"polluted":"yes","app_name":"evil"}',
      '"\\u005f_proto__":{"polluted":"yes"}',
      '"constructor":{"prototype":{}}',
      '"constructor":{"prototype":{"polluted":"yes"}}',
    ];
    for (const extra of extras) {
      const event = sampleEvent();
      // Before and after the fields: neither position may change what is read.
      for (const text of [`{${extra},${JSON.stringify(event).slice(1)}`, `${JSON.stringify(event).slice(0, -1)},${extra}}`]) {
        const res = await postEvent(owner, text);
        expect([201, 200], `${extra}: ${await res.clone().text()}`).toContain(res.status);
      }
      const stored = (await (await owner.api(`/api/events/${event.event_uuid}`)).json()) as Record<string, unknown>;
      expect(stored).toEqual({ ...event, event_time: expect.any(String), received_at: expect.any(String) });
      const row = await h.services.database.db.selectFrom('events').selectAll().where('event_uuid', '=', event.event_uuid as string).executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toMatch(/polluted|evil|prototype/);
    }
    // Nothing reached any prototype of this process (the server runs in it).
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(Object.prototype).not.toHaveProperty('app_name');
    // A body of nothing but such keys is an event missing every field, not malformed JSON.
    const empty = await expectProblem(await postEvent(owner, '{"__proto__": {"x": 1}}'), 422, 'validation_failed');
    expect(empty.errors?.map((e) => e.field)).toEqual([...EVENT_FIELDS]);
  });

  it('400 invalid_json for a body nested more than 32 levels deep, never a 5xx', async () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    // The event object is one level, so an extra field of 31 levels makes 32: accepted.
    const event = JSON.stringify(sampleEvent());
    expect((await postEvent(owner, `${event.slice(0, -1)},"extra":${nested(31)}}`)).status).toBe(201);
    for (const body of [`${JSON.stringify(sampleEvent()).slice(0, -1)},"extra":${nested(32)}}`, nested(20_000), `{"a":${'{"a":'.repeat(40)}1${'}'.repeat(41)}`]) {
      const res = await postEvent(owner, body);
      const problem = (await expectProblem(res, 400, 'invalid_json')) as { detail?: string };
      expect(problem.detail).toContain('32 levels');
    }
    // Brackets and escaped quotes inside strings are text, not nesting.
    const text = sampleEvent({ sip_message: `${'['.repeat(40)}\\"{{{{ \\\\" ${'{'.repeat(40)}`, sip_user_agent: '\\"]]]]]' });
    expect((await postEvent(owner, text)).status).toBe(201);
  });

  it('415 for a body in a content coding other than identity, saying so', async () => {
    const event = sampleEvent();
    for (const coding of ['gzip', 'br', 'deflate', 'GZIP', 'identity, gzip']) {
      const res = await postEvent(owner, event, { 'content-encoding': coding });
      const body = (await expectProblem(res, 415, 'unsupported_media_type')) as { detail?: string };
      expect(body.detail).toContain('content coding');
      expect(res.headers.get('accept-encoding')).toBe('identity');
    }
    const gzipped = await owner.api('/api/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify(event)),
    });
    await expectProblem(gzipped, 415, 'unsupported_media_type');
    expect((await owner.api(`/api/events/${event.event_uuid}`)).status).toBe(404);
    expect((await postEvent(owner, event, { 'content-encoding': 'identity' })).status).toBe(201);
  });

  it('413 over 128 KiB', async () => {
    const event = sampleEvent({ sip_message: 'x'.repeat(130 * 1024) });
    await expectProblem(await postEvent(owner, event), 413, 'payload_too_large');
  });

  it('422 listing every missing field at once', async () => {
    const body = await expectProblem(await postEvent(owner, {}), 422, 'validation_failed');
    expect(body.errors?.map((e) => e.field)).toEqual([...EVENT_FIELDS]);
  });

  it('422 for a body that is not an object', async () => {
    for (const body of ['[]', '"event"', '42', 'null']) {
      await expectProblem(await postEvent(owner, body), 422, 'validation_failed');
    }
  });

  it('422 listing every bad field, nothing stored', async () => {
    const before = await count(owner);
    const res = await postEvent(
      owner,
      sampleEvent({
        app_name: '',
        app_version: 4,
        event_timestamp: '2026-02-30 10:00:00',
        event_uuid: 'not-a-uuid',
        created_by_node_id: '{732e7f50-637d-4fde-81e0-5c32f1bb5a92}',
        collected_method: 'Responsive',
        transport_type: 'SCTP',
        source_ip: '256.1.1.1',
        destination_ip: '10.0.0',
        sip_method: 'INV ITE',
        sip_user_agent: null,
        sip_message: '',
      }),
    );
    const body = await expectProblem(res, 422, 'validation_failed');
    expect(body.errors?.map((e) => e.field)).toEqual([
      'app_name',
      'app_version',
      'event_timestamp',
      'event_uuid',
      'created_by_node_id',
      'collected_method',
      'transport_type',
      'source_ip',
      'destination_ip',
      'sip_method',
      'sip_user_agent',
      'sip_message',
    ]);
    expect(await count(owner)).toBe(before);
  });

  it('lets called_number and sip_user_agent be empty', async () => {
    expect((await postEvent(owner, sampleEvent({ called_number: '', sip_user_agent: '' }))).status).toBe(201);
  });

  it('enforces field sizes: 1,024 characters, sip_message 65,535 bytes, sip_method 32', async () => {
    expect((await postEvent(owner, sampleEvent({ app_name: 'a'.repeat(1024) }))).status).toBe(201);
    const long = await expectProblem(await postEvent(owner, sampleEvent({ app_name: 'a'.repeat(1025) })), 422, 'validation_failed');
    expect(long.errors).toEqual([{ field: 'app_name', message: expect.stringContaining('1024') }]);
    expect((await postEvent(owner, sampleEvent({ sip_message: 'x'.repeat(65_535) }))).status).toBe(201);
    // 21,846 three-byte characters are 65,538 bytes: over, though fewer characters.
    const wide = await expectProblem(await postEvent(owner, sampleEvent({ sip_message: '€'.repeat(21_846) })), 422, 'validation_failed');
    expect(wide.errors?.[0]?.field).toBe('sip_message');
    expect((await postEvent(owner, sampleEvent({ sip_method: 'X'.repeat(32) }))).status).toBe(201);
    await expectProblem(await postEvent(owner, sampleEvent({ sip_method: 'X'.repeat(33) })), 422, 'validation_failed');
  });

  it('counts characters, not UTF-16 units: 1,024 emoji fit, 1,025 do not', async () => {
    const event = sampleEvent({ sip_user_agent: '😀'.repeat(1024) });
    expect((await postEvent(owner, event)).status).toBe(201);
    const stored = (await (await owner.api(`/api/events/${event.event_uuid}`)).json()) as { sip_user_agent: string };
    expect(stored.sip_user_agent).toBe(event.sip_user_agent);
    const over = await expectProblem(await postEvent(owner, sampleEvent({ sip_user_agent: '😀'.repeat(1025) })), 422, 'validation_failed');
    expect(over.errors).toEqual([{ field: 'sip_user_agent', message: 'must be at most 1024 characters' }]);
  });

  it('422 for a lone UTF-16 surrogate, naming the field; nothing stored', async () => {
    const before = await count(owner);
    // JSON.stringify writes a lone surrogate as the escape \ud800: valid JSON, invalid text.
    const body = await expectProblem(await postEvent(owner, sampleEvent({ sip_user_agent: 'scanner\ud800' })), 422, 'validation_failed');
    expect(body.errors).toEqual([{ field: 'sip_user_agent', message: expect.stringContaining('surrogate') }]);
    expect(await count(owner)).toBe(before);
  });

  it('rejects timestamps in impossible shapes and more than 24 h ahead', async () => {
    const ahead = new Date(Date.now() + 25 * 3600_000).toISOString();
    const nearFuture = new Date(Date.now() + 23 * 3600_000).toISOString();
    for (const event_timestamp of ['2026-13-01 00:00:00', '2025-02-29 00:00:00', '22-02-2022 11:19:15', '2026-11-22 24:00:00', ahead, '2026-11-22 06:25:32.1234567890']) {
      const body = await expectProblem(await postEvent(owner, sampleEvent({ event_timestamp })), 422, 'validation_failed');
      expect(body.errors?.map((e) => e.field)).toEqual(['event_timestamp']);
    }
    for (const event_timestamp of ['2024-02-29 23:59:59', '2026-11-22 06:25:32', '2026-11-22T06:25:32.5+02:00', nearFuture]) {
      expect((await postEvent(owner, sampleEvent({ event_timestamp }))).status, event_timestamp).toBe(201);
    }
  });

  it('stores UUIDs lower-case and addresses canonical; ignores unknown fields', async () => {
    const upper = crypto.randomUUID().toUpperCase();
    const res = await postEvent(owner, sampleEvent({ event_uuid: upper, source_ip: '2001:DB8:0:0:0:0:0:1', extra: 'dropped' }));
    expect(res.status).toBe(201);
    const stored = (await (await owner.api(`/api/events/${upper}`)).json()) as Record<string, unknown>;
    expect(stored.event_uuid).toBe(upper.toLowerCase());
    expect(stored.source_ip).toBe('2001:db8::1');
    expect(stored).not.toHaveProperty('extra');
  });

  it('an identical replay answers 200 with the same body and stores nothing new', async () => {
    const event = sampleEvent();
    const first = await postEvent(owner, event);
    expect(first.status).toBe(201);
    const before = await count(owner);
    const again = await postEvent(owner, { ...event, extra: 'ignored' });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(await first.json());
    expect(await count(owner)).toBe(before);
    // Aggregates did not count it twice.
    const lookup = (await (await owner.api('/api/ip-addresses/203.0.113.7')).json()) as { seen_count: number };
    const direct = (await h.services.eventQuery.list(owner.account, { source_ip: '203.0.113.7', limit: 1000 })).data.length;
    expect(lookup.seen_count).toBe(direct);
  });

  it('the same uuid with different content is a 409 and changes nothing', async () => {
    const event = sampleEvent();
    expect((await postEvent(owner, event)).status).toBe(201);
    await expectProblem(await postEvent(owner, { ...event, sip_method: 'OPTIONS' }), 409, 'duplicate_event');
    const stored = (await (await owner.api(`/api/events/${event.event_uuid}`)).json()) as { sip_method: string };
    expect(stored.sip_method).toBe('INVITE');
  });

  it('concurrent submissions of one uuid store it once', async () => {
    const event = sampleEvent();
    const answers = await Promise.all(Array.from({ length: 10 }, () => postEvent(owner, event)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(9);
  });

  it('another account may use the same uuid: not a conflict', async () => {
    const other = await h.account();
    const event = sampleEvent();
    expect((await postEvent(owner, event)).status).toBe(201);
    expect((await postEvent(other, { ...event, sip_method: 'REGISTER' })).status).toBe(201);
  });

  it('403 plan_not_allowed for accounts not on the Contributor Plan, even with write:events', async () => {
    for (const plan of ['tester', 'business', 'service_provider']) {
      const who = await h.account({ plan, permissions: ['write:events', 'read:events'] });
      const res = await postEvent(who, sampleEvent());
      const body = await expectProblem(res, 403, 'plan_not_allowed');
      expect(body).not.toHaveProperty('errors');
      expect(await count(who)).toBe(0);
    }
  });

  it('403 plan_not_allowed whatever the body: permission is checked before content', async () => {
    const who = await h.account({ plan: 'business', permissions: ['write:events', 'read:events'] });
    const token = await who.token();
    const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
      fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body });
    const bodies: Array<[string, Response]> = [
      ['malformed JSON', await post('{"app_name":')],
      ['empty body', await post('')],
      ['missing fields', await post('{}')],
      ['bad fields', await post(JSON.stringify(sampleEvent({ source_ip: 'nope' })))],
      ['not an object', await post('[]')],
      ['too deep', await post('['.repeat(100) + ']'.repeat(100))],
      ['unsupported media type', await post('<event/>', { 'content-type': 'application/xml' })],
      ['content coding', await post(JSON.stringify(sampleEvent()), { 'content-type': 'application/json', 'content-encoding': 'gzip' })],
      ['too large', await post(JSON.stringify(sampleEvent({ sip_message: 'x'.repeat(200 * 1024) })))],
    ];
    for (const [what, res] of bodies) {
      expect(res.status, what).toBe(403);
      expect(await res.json(), what).toMatchObject({ error: 'plan_not_allowed' });
    }
    expect(await count(who)).toBe(0);
    // Authentication and permission still come first.
    const anonymous = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    await expectProblem(anonymous, 401, 'invalid_token');
    const reader = await h.account({ plan: 'business', permissions: ['read:events'] });
    await expectProblem(await postEvent(reader, '{'), 403, 'insufficient_scope');
  });

  it('a plan change takes effect on the next request', async () => {
    const who = await h.account({ plan: 'tester', permissions: ['write:events'] });
    expect((await postEvent(who, sampleEvent())).status).toBe(403);
    await h.services.accounts.setPlan(who.account.account_id, 'contributor');
    expect((await postEvent(who, sampleEvent())).status).toBe(201);
  });
});

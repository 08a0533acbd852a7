import { request, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TESTER_PLAN } from '../../src/domain/accounts/plans.ts';
import { BODY_READ_BY_LANE, directIntake } from '../../src/http/lanes/direct-intake.ts';
import { SPENT_BY_LANE } from '../../src/http/lanes/direct-lanes.ts';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { laneServer, laneServicesOf } from '../support/lanes.ts';

/**
 * Single-event intake's direct lane (src/http/lanes/direct-intake.ts) answers as the full /api
 * pipeline does, hands everything else to that pipeline, and spends and counts each request once.
 */
describe('single events submitted ahead of Fastify', () => {
  let direct: Harness;
  let full: Harness;

  beforeAll(async () => {
    direct = await startHarness({}, { metrics: new PrometheusMetrics() });
    // The same store served by the full pipeline alone.
    full = await startHarness({ DATABASE_URL: direct.config.databaseUrl, TOLLWATCH_DIRECT_INTAKE: 'off' }, { metrics: new PrometheusMetrics() });
  });
  afterAll(async () => {
    await full?.close();
    await direct?.close();
  });

  /** Status, headers but the date and the allowance left, and the parsed body. */
  async function submit(h: Harness, token: string, body: string, contentType = 'application/json') {
    const res = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body });
    const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== 'date' && name !== 'ratelimit'));
    return { status: res.status, headers, ratelimit: res.headers.get('ratelimit'), body: await res.json() };
  }

  /** An account's token, admitted by both servers (as any token is before a lane knows it). */
  async function admittedToken(who: TestAccount): Promise<string> {
    const token = await who.token();
    for (const h of [direct, full]) {
      expect((await fetch(`${h.url}/api/events?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    }
    return token;
  }

  it('gives the full pipeline’s status, headers and body, for every answer, and stores the event as the pipeline does', async () => {
    const token = await admittedToken(await direct.account());
    const fresh = () => sampleEvent({ called_number: '+46 8 121 185 32', source_ip: '2001:0db8::0:7' });
    const cases: Array<[string, (h: Harness) => string, string?]> = [
      ['created', () => JSON.stringify(fresh())],
      ['created, as text/plain with a charset', () => JSON.stringify(fresh()), 'text/plain; charset=UTF-8'],
      ['created, with an unknown field and a prototype key', () => `{"__proto__":{"x":1},"extra":1,${JSON.stringify(fresh()).slice(1)}`],
      ['invalid fields', () => JSON.stringify(sampleEvent({ source_ip: '01.2.3.4', sip_method: '' }))],
      ['not JSON', () => '{"app_name":'],
      ['nested too deep', () => '['.repeat(40) + ']'.repeat(40)],
      ['a JSON array', () => '[]'],
    ];
    for (const [name, body, type] of cases) {
      const [lane, pipeline] = [await submit(direct, token, body(direct), type), await submit(full, token, body(full), type)];
      expect({ ...lane, headers: { ...lane.headers, location: typeof lane.headers.location } }, name).toEqual({
        ...pipeline,
        headers: { ...pipeline.headers, location: typeof pipeline.headers.location },
        ratelimit: pipeline.ratelimit === null ? null : expect.stringMatching(/^"submissions";r=\d+;t=\d+$/),
      });
    }
    // No Content-Type at all (fetch always sends one): read as JSON by both.
    const bare = async (h: Harness) => {
      const res = await postRaw(`${h.url}/api/events`, { authorization: `Bearer ${token}` }, JSON.stringify(fresh()));
      return { ...res, headers: { ...res.headers, location: typeof res.headers.location } };
    };
    const [laneBare, pipelineBare] = [await bare(direct), await bare(full)];
    expect(laneBare.status).toBe(201);
    expect(laneBare).toEqual({ ...pipelineBare, headers: { ...pipelineBare.headers, ratelimit: expect.stringMatching(/^"submissions";r=\d+;t=\d+$/) } });

    // A replay and a conflicting reuse of one uuid, the first sent through each server in turn.
    const event = fresh();
    expect((await submit(direct, token, JSON.stringify(event))).status).toBe(201);
    for (const [name, body] of [
      ['replay', JSON.stringify(event)],
      ['conflict', JSON.stringify({ ...event, sip_method: 'OPTIONS' })],
    ] as const) {
      const [lane, pipeline] = [await submit(direct, token, body), await submit(full, token, body)];
      expect(lane, name).toEqual({ ...pipeline, ratelimit: expect.stringMatching(/^"submissions";r=\d+;t=\d+$/) });
    }
    // Stored as the pipeline stores it, read back through the pipeline.
    const stored = await fetch(`${full.url}/api/events/${event.event_uuid}`, { headers: { authorization: `Bearer ${token}` } });
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ ...event, called_number: '+46 8 121 185 32', source_ip: '2001:db8::7' });
  });

  it('spends one unit of the allowance per request the pipeline would charge, whichever way it went', async () => {
    await direct.services.plans.save({ ...TESTER_PLAN, name: 'six-submissions', maySubmit: true, submissions: { limit: 6, windowSeconds: 3600 } });
    const token = await admittedToken(await direct.account({ plan: 'six-submissions' }));
    const event = sampleEvent();
    // A body that is not JSON is refused before the allowance is spent (400, no RateLimit
    // field); fields that are wrong, a replay and a conflict are charged, as the pipeline charges them.
    const bodies = [
      JSON.stringify(event),
      '{"app_name":',
      JSON.stringify(sampleEvent({ sip_method: '' })),
      JSON.stringify(event),
      JSON.stringify({ ...event, sip_method: 'OPTIONS' }),
      JSON.stringify(sampleEvent()),
      JSON.stringify(sampleEvent()),
      JSON.stringify(sampleEvent()),
    ];
    const answers: Array<[number, string | undefined]> = [];
    for (const body of bodies) {
      const { status, ratelimit } = await submit(direct, token, body);
      answers.push([status, /r=(\d+)/.exec(ratelimit ?? '')?.[1]]);
    }
    expect(answers).toEqual([
      [201, '5'],
      [400, undefined],
      [422, '4'],
      [200, '3'],
      [409, '2'],
      [201, '1'],
      [201, '0'],
      [429, '0'],
    ]);
  });

  it('counts each answer once, in the same metrics as the pipeline', async () => {
    const token = await admittedToken(await direct.account());
    const counted = async (h: Harness) => {
      const text = await (await fetch(`${h.url}/metrics`)).text();
      const line = (prefix: string) => Number(text.split('\n').find((l) => l.startsWith(prefix))?.split(' ').at(-1) ?? 0);
      return {
        created: line('tollwatch_events_ingested_total{mode="single",outcome="created"}'),
        invalid: line('tollwatch_events_ingested_total{mode="single",outcome="invalid"}'),
        answered201: line('tollwatch_http_requests_total{route="/api/events",method="POST",status="201"}'),
        answered422: line('tollwatch_http_requests_total{route="/api/events",method="POST",status="422"}'),
        timed: line('tollwatch_http_request_duration_seconds_count{route="/api/events",method="POST"}'),
      };
    };
    for (const h of [direct, full]) {
      const before = await counted(h);
      for (const body of [sampleEvent(), sampleEvent(), sampleEvent({ source_ip: 'nowhere' })]) await submit(h, token, JSON.stringify(body));
      const after = await counted(h);
      expect(Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]])), h === direct ? 'lane' : 'pipeline').toEqual({
        created: 2,
        invalid: 1,
        answered201: 2,
        answered422: 1,
        timed: 3,
      });
    }
  });

  describe('what it takes and what it hands over', () => {
    let server: Server;
    let url: string;
    /** What reached the pipeline: the request line, and the body and allowance the lane handed with it. */
    const handedOver: Array<{ line: string; body?: string; spent: boolean }> = [];
    /** The calls the lane told as the clients' "last API call". */
    const told: Array<[string, string]> = [];
    let owner: TestAccount;
    let token: string;

    beforeAll(async () => {
      const lane = directIntake({ ...laneServicesOf(direct, told), intake: direct.services.intake });
      ({ server, url } = await laneServer(lane, (request) => {
        handedOver.push({ line: `${request.method} ${request.url}`, body: request[BODY_READ_BY_LANE]?.toString('utf8'), spent: request[SPENT_BY_LANE] !== undefined });
      }));
      owner = await direct.account();
      token = await admittedToken(owner);
    });
    afterAll(() => new Promise<void>((resolve) => void (server?.close(() => resolve()) ?? resolve())));

    async function send(init: RequestInit & { path?: string } = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      if (!headers.has('content-type') && init.body !== undefined) headers.set('content-type', 'application/json');
      handedOver.length = 0;
      const res = await fetch(`${url}${init.path ?? '/api/events'}`, { method: 'POST', body: JSON.stringify(sampleEvent()), ...init, headers });
      await res.arrayBuffer();
      return { status: res.status, handedOver: handedOver[0] };
    }

    it('stores an event of an admitted token itself, and tells the call from the address Fastify would read', async () => {
      told.length = 0;
      const event = sampleEvent();
      expect(await send({ body: JSON.stringify(event), headers: { 'x-forwarded-for': '198.51.100.23' } })).toEqual({ status: 201, handedOver: undefined });
      expect(await send({ body: JSON.stringify(event) })).toEqual({ status: 200, handedOver: undefined });
      expect(await send({ body: JSON.stringify(sampleEvent()), headers: { 'content-type': 'text/plain' } })).toEqual({ status: 201, handedOver: undefined });
      // With no Content-Type at all, as the pipeline reads it: JSON.
      handedOver.length = 0;
      expect((await postRaw(`${url}/api/events`, { authorization: `Bearer ${token}` }, JSON.stringify(sampleEvent()))).status).toBe(201);
      expect(handedOver).toEqual([]);
      expect(told).toEqual([
        [owner.clientId, '198.51.100.23'],
        [owner.clientId, '127.0.0.1'],
        [owner.clientId, '127.0.0.1'],
        [owner.clientId, '127.0.0.1'],
      ]);
    });

    it('takes a body sent after a 100 Continue, as libcurl sends a large one', async () => {
      const body = JSON.stringify(sampleEvent({ sip_message: `INVITE sip:1@192.0.2.1 SIP/2.0\r\n${'X-Padding: x\r\n'.repeat(200)}\r\n` }));
      handedOver.length = 0;
      const answer = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
        let continued = false;
        const sent = request(`${url}/api/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
        });
        sent.on('continue', () => {
          continued = true;
          sent.end(body);
        });
        sent.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, continued }));
        });
        sent.on('error', reject);
      });
      expect(answer).toEqual({ status: 201, continued: true });
      expect(handedOver).toEqual([]);
    });

    it('hands over, unread, what the pipeline must judge before the body', async () => {
      const tester = await direct.account({ plan: 'tester', permissions: ['write:events'] });
      const testerToken = await tester.token();
      await tester.api('/api/events?limit=1');
      const reader = await direct.account({ permissions: ['read:phone-numbers'] });
      const readerToken = await reader.token();
      await reader.api('/api/phone-numbers/100');
      const basic = `Basic ${Buffer.from(`${owner.clientId}:${owner.clientSecret}`).toString('base64')}`;
      const cases: Array<[string, RequestInit & { path?: string }]> = [
        ['no credentials', { headers: { authorization: '' } }],
        ['an unknown token', { headers: { authorization: 'Bearer not.a.token' } }],
        ['Basic credentials', { headers: { authorization: basic } }],
        ['a token without write:events', { headers: { authorization: `Bearer ${readerToken}` } }],
        ['a plan that may not submit', { headers: { authorization: `Bearer ${testerToken}` } }],
        ['a query string', { path: '/api/events?x=1' }],
        ['a trailing slash', { path: '/api/events/' }],
        ['the batch route', { path: '/api/events/batch' }],
        ['another method', { method: 'PUT' }],
        ['another media type', { headers: { 'content-type': 'application/xml' } }],
        ['a media type with parameters besides its charset', { headers: { 'content-type': 'application/json; charset=utf-8; x=1' } }],
        ['a content coding', { headers: { 'content-encoding': 'gzip' } }],
        ['an identity content coding, spelt out', { headers: { 'content-encoding': 'identity' } }],
        ['a body over the route’s bound', { body: JSON.stringify(sampleEvent({ sip_message: 'x'.repeat(200_000) })) }],
        ['an empty body', { body: '' }],
        ['a chunked body', { body: new Blob([JSON.stringify(sampleEvent())]).stream(), duplex: 'half' } as RequestInit],
      ];
      for (const [name, init] of cases) {
        const { handedOver: pipeline } = await send(init);
        expect(pipeline, name).toMatchObject({ body: undefined, spent: false });
      }
    });

    it('hands over with the body it read, and the allowance marked spent once it was', async () => {
      // Admitted afresh: the hand-overs before this test never reach the pipeline, which alone
      // renews a client's credentials check, and on a loaded machine they outlast it.
      token = await admittedToken(owner);
      const unreadable = '{"app_name": "sentrypeer",';
      expect(await send({ body: unreadable })).toEqual({ status: 299, handedOver: { line: 'POST /api/events', body: unreadable, spent: false } });
      const invalid = JSON.stringify(sampleEvent({ source_ip: 'nowhere' }));
      expect(await send({ body: invalid })).toEqual({ status: 299, handedOver: { line: 'POST /api/events', body: invalid, spent: true } });
      const event = sampleEvent();
      await send({ body: JSON.stringify(event) });
      const conflicting = JSON.stringify({ ...event, sip_method: 'OPTIONS' });
      expect(await send({ body: conflicting })).toEqual({ status: 299, handedOver: { line: 'POST /api/events', body: conflicting, spent: true } });
    });

    it('hands over a token revoked since it was admitted', async () => {
      const who = await direct.account();
      const revoked = await admittedToken(who);
      expect((await send({ headers: { authorization: `Bearer ${revoked}` } })).status).toBe(201);
      await direct.services.accounts.resetSecret(who.clientId);
      expect(await send({ headers: { authorization: `Bearer ${revoked}` } })).toMatchObject({ status: 299, handedOver: { body: undefined } });
    });
  });
});

/** A POST through node:http, which adds no header of its own but Host and Connection: status, headers but the date, and the parsed body (null if none). */
function postRaw(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const { date: _date, ...kept } = res.headers;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: kept, body: text === '' ? null : JSON.parse(text) });
      });
    });
    sent.on('error', reject);
    sent.end(body);
  });
}

import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TESTER_PLAN } from '../../src/domain/accounts/plans.ts';
import { directLookups } from '../../src/http/lanes/direct-lookups.ts';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.ts';
import { laneServer, laneServicesOf } from '../support/lanes.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * The lookups' direct lane (src/http/lanes/direct-lookups.ts) answers as the full /api pipeline does,
 * and hands everything it cannot decide in memory to that pipeline.
 */
describe('lookups answered ahead of Fastify', () => {
  let direct: Harness;
  let full: Harness;
  let fleet: TestAccount;

  beforeAll(async () => {
    direct = await startHarness();
    // The same store served by the full pipeline alone.
    full = await startHarness({ DATABASE_URL: direct.config.databaseUrl, TOLLWATCH_DIRECT_LOOKUPS: 'off' });
    fleet = await direct.account({ trusted: true });
    for (const event of [
      sampleEvent({ called_number: '0046812118532', source_ip: '203.0.113.7', sip_method: 'INVITE' }),
      sampleEvent({ called_number: '+448712345678', source_ip: '2001:db8::7', sip_method: 'OPTIONS', sip_user_agent: 'sipvicious <b>' }),
    ]) {
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    // Folded, and heard of by the other instance (at a fold turn of its own, as within 250 ms).
    await direct.settled();
    await full.settled();
  });
  afterAll(async () => {
    await full?.close();
    await direct?.close();
  });

  /** Status, headers but the date and the allowance left, and the body's text. */
  async function answer(h: Harness, token: string, path: string) {
    const res = await fetch(`${h.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== 'date' && name !== 'ratelimit'));
    return { status: res.status, headers, ratelimit: res.headers.get('ratelimit'), body: await res.text() };
  }

  it('gives the full pipeline’s status, headers and body byte for byte, found and not found, however the value is written', async () => {
    const caller = await direct.account({ permissions: ['read:phone-numbers', 'read:ip-addresses'] });
    const token = await caller.token();
    const paths = [
      '/api/phone-numbers/%2B46812118532',
      '/api/phone-numbers/0046812118532',
      '/api/phone-numbers/tel%3A%2B46%208%20121%20185%2032',
      '/api/phone-numbers/%2B448712345678',
      '/api/phone-numbers/%2B15550000000',
      // Never seen, in a range seen: a 404 with the range's evidence (docs/api.md §7, `range`).
      '/api/phone-numbers/%2B46812118599',
      '/api/ip-addresses/203.0.113.7',
      '/api/ip-addresses/2001%3Adb8%3A%3A7',
      '/api/ip-addresses/2001:0db8:0:0::7',
      '/api/ip-addresses/198.51.100.99',
    ];
    // A first request admits the token on each server; later ones take the lane where there is one.
    await answer(direct, token, paths[0]!);
    await answer(full, token, paths[0]!);
    for (const path of paths) {
      const [lane, pipeline] = [await answer(direct, token, path), await answer(full, token, path)];
      expect(lane, path).toEqual({ ...pipeline, ratelimit: expect.stringMatching(/^"lookups";r=\d+;t=\d+$/) });
      expect([200, 404]).toContain(lane.status);
    }
  });

  it('spends one unit of the allowance per request, whichever way the request went', async () => {
    await direct.services.plans.save({ ...TESTER_PLAN, name: 'five-lookups', lookups: { limit: 5, windowSeconds: 3600 } });
    const caller = await direct.account({ plan: 'five-lookups', permissions: ['read:phone-numbers'] });
    const token = await caller.token();
    // The first request is the pipeline's (the token is new here), then the lane's; an invalid
    // value goes back to the pipeline after the lane spent its unit; the sixth is refused.
    const statuses: Array<[number, string | null]> = [];
    for (const value of ['%2B46812118532', '%2B46812118532', 'not-a-number!', '%2B15550000000', '%2B46812118532', '%2B46812118532']) {
      const res = await fetch(`${direct.url}/api/phone-numbers/${value}`, { headers: { authorization: `Bearer ${token}` } });
      statuses.push([res.status, res.headers.get('ratelimit')]);
    }
    expect(statuses.map(([status]) => status)).toEqual([200, 200, 400, 404, 200, 429]);
    expect(statuses.slice(0, 5).map(([, field]) => /r=(\d+)/.exec(field ?? '')?.[1])).toEqual(['4', '3', '2', '1', '0']);
  });

  describe('what it takes and what it hands over', () => {
    let server: Server;
    let url: string;
    const handedOver: string[] = [];
    /** The calls the lane told as the clients' "last API call". */
    const told: Array<[string, string]> = [];
    let callerId: string;
    let token: string;
    let basic: string;

    beforeAll(async () => {
      const lane = directLookups({ ...laneServicesOf(direct, told), lookups: direct.services.lookups });
      ({ server, url } = await laneServer(lane, (request) => void handedOver.push(`${request.method} ${request.url}`)));
      const caller = await direct.account({ permissions: ['read:phone-numbers'] });
      callerId = caller.clientId;
      token = await caller.token();
      basic = `Basic ${Buffer.from(`${caller.clientId}:${caller.clientSecret}`).toString('base64')}`;
      // Admitted by the full pipeline once, as any token is before the lane knows it.
      expect((await caller.api('/api/phone-numbers/100', { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
    });
    afterAll(() => new Promise<void>((resolve) => void (server?.close(() => resolve()) ?? resolve())));

    async function send(path: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      handedOver.length = 0;
      const res = await fetch(`${url}${path}`, { ...init, headers });
      await res.arrayBuffer();
      return { status: res.status, handedOver: handedOver.length > 0 };
    }

    it('answers a found and a not-found lookup of an admitted token itself', async () => {
      expect(await send('/api/phone-numbers/%2B46812118532')).toEqual({ status: 200, handedOver: false });
      expect(await send('/api/phone-numbers/%2B15550000000')).toEqual({ status: 404, handedOver: false });
    });

    it('tells each call it answers as the client’s last API call, from the address Fastify would read, and none it hands over', async () => {
      told.length = 0;
      expect(await send('/api/phone-numbers/%2B46812118532', { headers: { 'x-forwarded-for': '198.51.100.23' } })).toEqual({ status: 200, handedOver: false });
      expect(await send('/api/phone-numbers/%2B15550000000')).toEqual({ status: 404, handedOver: false });
      expect(await send('/api/phone-numbers/not-a-number!')).toMatchObject({ handedOver: true });
      expect(told).toEqual([
        [callerId, '198.51.100.23'],
        [callerId, '127.0.0.1'],
      ]);
    });

    it('hands over what only the pipeline can answer', async () => {
      const cases: Array<[string, RequestInit]> = [
        ['/api/phone-numbers/%2B46812118532', { headers: { authorization: 'Bearer not.a.token' } }],
        ['/api/phone-numbers/%2B46812118532', { headers: { authorization: basic } }],
        ['/api/phone-numbers/%2B46812118532', { headers: { authorization: '' } }],
        // Its token lacks read:ip-addresses: the pipeline's 403.
        ['/api/ip-addresses/203.0.113.7', {}],
        ['/api/phone-numbers/%2B46812118532?x=1', {}],
        ['/api/phone-numbers/%E0%A4%A', {}],
        ['/api/phone-numbers/range/abcde', {}],
        ['/api/phone-numbers/not-a-number!', {}],
        ['/api/phone-numbers/%2B46812118532', { method: 'HEAD' }],
        ['/api/phone-numbers/lookup', { method: 'POST', body: '[]', headers: { 'content-type': 'application/json' } }],
        ['/api/events', {}],
      ];
      for (const [path, init] of cases) expect((await send(path, init)).handedOver, `${init.method ?? 'GET'} ${path}`).toBe(true);
    });

    it('hands over a token revoked since it was admitted', async () => {
      const caller = await direct.account({ permissions: ['read:phone-numbers'] });
      const revoked = await caller.token();
      expect((await caller.api('/api/phone-numbers/100', { headers: { authorization: `Bearer ${revoked}` } })).status).toBe(404);
      expect(await send('/api/phone-numbers/100', { headers: { authorization: `Bearer ${revoked}` } })).toEqual({ status: 404, handedOver: false });
      await direct.services.accounts.resetSecret(caller.clientId);
      expect(await send('/api/phone-numbers/100', { headers: { authorization: `Bearer ${revoked}` } })).toEqual({ status: 299, handedOver: true });
    });
  });

  describe('whatever the log level', () => {
    /** The lines a harness's logger wrote at `level`, parsed. */
    async function logged(level: string, requests: (h: Harness, token: string) => Promise<void>) {
      const lines: Array<Record<string, any>> = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
          done();
        },
      });
      const h = await startHarness({ DATABASE_URL: direct.config.databaseUrl }, {}, { loggerInstance: createLogger(level, sink) });
      try {
        const caller = await h.account({ permissions: ['read:phone-numbers'] });
        await requests(h, await caller.token());
      } finally {
        await h.close();
      }
      return lines;
    }

    it('serves lookups ahead of Fastify at info too, and logs each answered lookup with its status and time', async () => {
      const lines = await logged('info', async (h, token) => {
        // The first admits the token through the pipeline; the next two are the lane's.
        for (const value of ['%2B46812118532', '%2B46812118532', '%2B15550000000']) {
          expect((await fetch(`${h.url}/api/phone-numbers/${value}`, { headers: { authorization: `Bearer ${token}` } })).status).toBeGreaterThan(0);
        }
      });
      const completed = lines.filter((line) => line.msg === 'request completed' && String(line.req?.url ?? '').startsWith('/api/phone-numbers/'));
      // The pipeline's line of completion has no request (its "incoming request" line does); the lane's one line has both.
      const pipeline = lines.filter((line) => line.msg === 'incoming request' && String(line.req?.url).startsWith('/api/phone-numbers/'));
      expect(pipeline.map((line) => line.req.url)).toEqual(['/api/phone-numbers/%2B46812118532']);
      expect(completed.map((line) => [line.req.method, line.req.url, line.res.statusCode])).toEqual([
        ['GET', '/api/phone-numbers/%2B46812118532', 200],
        ['GET', '/api/phone-numbers/%2B15550000000', 404],
      ]);
      for (const line of completed) {
        expect(line.level).toBe(30);
        expect(line.responseTime).toBeGreaterThan(0);
        expect(line.req.remoteAddress).toBe('127.0.0.1');
        expect(JSON.stringify(line)).not.toContain('Bearer');
      }
    });

    it('writes no line for a lookup when the level is above info', async () => {
      const lines = await logged('warn', async (h, token) => {
        for (let i = 0; i < 3; i++) await fetch(`${h.url}/api/phone-numbers/%2B46812118532`, { headers: { authorization: `Bearer ${token}` } });
      });
      expect(lines.filter((line) => String(line.req?.url ?? '').startsWith('/api/phone-numbers/'))).toEqual([]);
    });
  });
});

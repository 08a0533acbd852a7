import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

function expectRateHeaders(res: Response, limit: number, window: number) {
  expect(res.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(Number(res.headers.get('ratelimit-remaining'))).toBeGreaterThanOrEqual(0);
  expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
  expect(Number(res.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(window);
  expect(res.headers.get('ratelimit-policy')).toBe(`${limit};w=${window}`);
}

describe('per-plan rate limits (CONTRACT §9)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await h.services.plans.save({
      name: 'tiny_contributor',
      maySubmit: true,
      lookups: { limit: 3, windowSeconds: 60 },
      submissions: { limit: 2, windowSeconds: 60 },
      maxClients: 2,
    });
  });
  afterAll(() => h.close());

  it('counts lookups per account; the tester plan gets 5 per hour, then 429 with Retry-After', async () => {
    const tester = await h.account({ plan: 'tester' });
    const other = await h.account({ plan: 'tester' });
    for (let i = 0; i < 5; i++) {
      const res = await tester.api(i % 2 ? '/api/ip-addresses/192.0.2.1' : '/api/phone-numbers/100');
      expect(res.status).toBe(404);
      expectRateHeaders(res, 5, 3600);
      expect(res.headers.get('ratelimit-remaining')).toBe(String(4 - i));
    }
    const refused = await tester.api('/api/phone-numbers/100');
    expect(refused.status).toBe(429);
    expectRateHeaders(refused, 5, 3600);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(await refused.json()).toMatchObject({ status: 429, error: 'rate_limited' });
    // Another account on the same plan is untouched.
    expect((await other.api('/api/phone-numbers/100')).status).toBe(404);
  });

  it('keeps lookups and submissions apart, each with its own allowance', async () => {
    const who = await h.account({ plan: 'tiny_contributor' });
    for (let i = 0; i < 2; i++) {
      const res = await postEvent(who, sampleEvent());
      expect(res.status).toBe(201);
      expectRateHeaders(res, 2, 60);
    }
    const third = await postEvent(who, sampleEvent());
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({ error: 'rate_limited' });
    // A refused submission stored nothing.
    expect((await h.services.eventQuery.list(who.account, {})).data).toHaveLength(2);
    const lookup = await who.api('/api/phone-numbers/%2B46812118532');
    expect(lookup.status).toBe(200);
    expectRateHeaders(lookup, 3, 60);
  });

  it('does not limit routes outside the plan table, and leaves no limit headers there', async () => {
    const who = await h.account({ plan: 'tester', permissions: ['read:events'] });
    for (let i = 0; i < 8; i++) {
      const res = await who.api('/api/events');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
  });

  it('applies an operator’s plan change from the next request', async () => {
    const who = await h.account({ plan: 'tester' });
    await h.services.accounts.setPlan(who.account.account_id, 'tiny_contributor');
    const res = await who.api('/api/phone-numbers/100');
    expectRateHeaders(res, 3, 60);
  });
});

describe('failed authentication is slowed, then refused (CONTRACT §2)', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness({}, { throttle: { perAddress: 6, perClient: 1000, freeFailures: 3, delayStepMs: 50, maxDelayMs: 200 } });
    who = await h.account();
  });
  afterAll(() => h.close());

  const badToken = (clientId = who.clientId) =>
    fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: clientId, client_secret: 'wrong', audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' }),
    });

  it('answers failures beyond the free ones later, then 429 for the address, even with good credentials', async () => {
    for (let i = 1; i <= 6; i++) {
      const started = performance.now();
      const res = await badToken();
      expect(res.status).toBe(401);
      // Past the free failures, each answer waits at least its delay: that is the slowing.
      if (i > 3) expect(performance.now() - started).toBeGreaterThanOrEqual(Math.min(200, (i - 3) * 50) - 5);
    }
    const refused = await badToken();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({ error: 'rate_limited', error_description: expect.any(String) });
    // The address is refused before credentials are even checked.
    await expect(who.token()).rejects.toThrow(/429/);
    // API calls with bad tokens from that address are refused too.
    const api = await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: 'Bearer nope' } });
    expect(api.status).toBe(429);
    expect(await api.json()).toMatchObject({ error: 'rate_limited' });
  });
});

describe('per-client throttling', () => {
  it('refuses a client id that keeps failing, whatever the address', async () => {
    const h = await startHarness({}, { throttle: { perAddress: 1000, perClient: 3, freeFailures: 100 } });
    try {
      const who = await h.account();
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${h.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: who.clientId, client_secret: 'x', audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' }),
        });
        expect(res.status).toBe(401);
      }
      await expect(who.token()).rejects.toThrow(/429/);
      // Another client from the same address is unaffected.
      const other = await h.account();
      await expect(other.token()).resolves.toEqual(expect.any(String));
    } finally {
      await h.close();
    }
  });

  it('does not count expired or revoked tokens as attacks', async () => {
    const h = await startHarness({}, { throttle: { perAddress: 2, freeFailures: 100 } });
    try {
      const who = await h.account();
      const token = await who.token();
      await h.services.accounts.resetSecret(who.clientId);
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(401);
      }
    } finally {
      await h.close();
    }
  });
});

describe('audit log', () => {
  it('records who did what and when: tokens, refusals, client and plan changes, failed API auth', async () => {
    const h = await startHarness();
    try {
      const who = await h.account();
      await who.token();
      await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: who.clientId, client_secret: 'x', audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' }),
      });
      await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: 'Bearer forged' } });
      await h.services.accounts.setPlan(who.account.account_id, 'business');
      const { client_secret } = await h.services.accounts.resetSecret(who.clientId);
      await h.services.accounts.deleteClient(who.clientId);
      await new Promise((resolve) => setTimeout(resolve, 50));

      const rows = await h.services.database.db.selectFrom('audit_log').selectAll().orderBy('id').execute();
      const actions = rows.map((r) => r.action);
      expect(actions).toEqual(
        expect.arrayContaining([
          'account.created',
          'client.created',
          'token.issued',
          'token.refused',
          'api.auth_failed',
          'account.plan_changed',
          'client.secret_reset',
          'client.deleted',
        ]),
      );
      for (const row of rows) expect(row.at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      const issued = rows.find((r) => r.action === 'token.issued')!;
      expect(issued).toMatchObject({ actor: `client:${who.clientId}`, account_id: who.account.account_id, ip: '127.0.0.1' });
      expect(JSON.parse(rows.find((r) => r.action === 'account.plan_changed')!.detail!)).toEqual({ from: 'contributor', to: 'business' });
      expect(rows.find((r) => r.action === 'token.refused')).toMatchObject({ client_id: who.clientId, ip: '127.0.0.1' });
      // Secrets never reach the audit log.
      expect(JSON.stringify(rows)).not.toContain(who.clientSecret);
      expect(JSON.stringify(rows)).not.toContain(client_secret);
    } finally {
      await h.close();
    }
  });
});

describe('hardening', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_REQUEST_TIMEOUT: '1' });
    who = await h.account();
  });
  afterAll(() => h.close());

  it('sends security headers on API and token answers: the strict policy of a JSON API', async () => {
    for (const res of [await who.api('/api/phone-numbers/100'), await fetch(`${h.url}/oauth/token`, { method: 'POST' })]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // Exactly this, none of the HTML-page directives helmet adds by default.
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('answers deeply nested and huge-number JSON with a 4xx, never a 5xx', async () => {
    for (const body of ['['.repeat(60_000) + ']'.repeat(60_000), `{"a":${'9'.repeat(100_000)}}`, '{"a":"\\ud800"}', '{"constructor":{"prototype":{"x":1}}}']) {
      const res = await postEvent(who, body);
      expect(res.status, body.slice(0, 20)).toBeGreaterThanOrEqual(400);
      expect(res.status, body.slice(0, 20)).toBeLessThan(500);
    }
  });

  it('cuts off a client that sends its request too slowly', async () => {
    const { port } = new URL(h.url);
    const closedAfter = await new Promise<number>((resolve, reject) => {
      const started = Date.now();
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('POST /api/events HTTP/1.1\r\nHost: x\r\n'));
      socket.on('error', () => resolve(Date.now() - started));
      socket.on('close', () => resolve(Date.now() - started));
      setTimeout(() => reject(new Error('slow client was never cut off')), 20_000);
    });
    expect(closedAfter).toBeLessThan(20_000);
  });
});

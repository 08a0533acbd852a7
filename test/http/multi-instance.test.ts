import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOKUP_VISIBILITY_MS, postEvent, sampleEvent, startHarness, within, type Harness, type TestAccount } from '../support/harness.ts';
import { redisUnreachable, TEST_REDIS_URL } from '../support/redis.ts';
import { TEST_STORE } from '../support/test-database.ts';

const redisProblem = TEST_STORE === 'postgres' ? await redisUnreachable() : 'not a PostgreSQL run';
if (redisProblem && TEST_STORE === 'postgres') {
  if (process.env.TOLLWATCH_REQUIRE_POSTGRES === '1') throw new Error(`Redis is required for the multi-instance tests: ${redisProblem}`);
  console.warn(`*** multi-instance tests SKIPPED: Redis unreachable (${redisProblem}) ***`);
}

/**
 * Two instances behind one address share one PostgreSQL database and one Redis; each has its
 * own caches, limiters and connections, exactly as two processes would.
 */
describe.skipIf(Boolean(redisProblem))('several instances on one PostgreSQL and one Redis', () => {
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    a = await startHarness({ REDIS_URL: TEST_REDIS_URL });
    b = await startHarness({ DATABASE_URL: a.config.databaseUrl, REDIS_URL: TEST_REDIS_URL });
  });
  afterAll(async () => {
    await b.app.close();
    await b.services.close();
    await a.close();
  });

  const on = (h: Harness, path: string, token: string) => fetch(`${h.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

  it('a token issued by one instance is accepted by the other', async () => {
    const who = await a.account();
    const token = await who.token();
    expect((await on(b, '/api/phone-numbers/100', token)).status).toBe(404);
  });

  it('a secret reset on one instance is refused by the other within one second', async () => {
    const who = await a.account();
    const token = await who.token();
    // B has the client cached now.
    expect((await on(b, '/api/phone-numbers/100', token)).status).toBe(404);
    await a.services.accounts.resetSecret(who.clientId);
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 1000) {
      status = (await on(b, '/api/phone-numbers/100', token)).status;
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(401);
  });

  it('a client deleted on one instance is refused by the other within one second', async () => {
    const who = await a.account();
    const token = await who.token();
    expect((await on(b, '/api/phone-numbers/100', token)).status).toBe(404);
    await a.services.accounts.deleteClient(who.clientId);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await on(b, '/api/phone-numbers/100', token)).status).toBe(401);
  });

  it('a rate limit counts requests across both instances', async () => {
    const who: TestAccount = await a.account({ plan: 'tester' });
    const token = await who.token();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await on(i % 2 ? b : a, '/api/phone-numbers/100', token)).status);
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429]);
  });

  it('an event acknowledged by one instance is counted by lookups on the other within the bound', async () => {
    const who = await a.account();
    const event = sampleEvent({ called_number: `+4420${Math.floor(Math.random() * 1e8)}` });
    expect((await postEvent(who, event)).status).toBe(201);
    const token = await who.token();
    let seen: unknown;
    const counted = await within(LOOKUP_VISIBILITY_MS, async () => {
      const res = await on(b, `/api/phone-numbers/${encodeURIComponent(String(event.called_number))}`, token);
      seen = res.status === 200 ? ((await res.json()) as { seen_count: number }).seen_count : res.status;
      return res.status === 200;
    });
    expect(counted, `last answer: ${String(seen)}`).toBe(true);
    expect(seen).toBe(1);
    // And a replay on the other instance is recognised.
    const again = await fetch(`${b.url}/api/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    expect(again.status).toBe(200);
  });
});

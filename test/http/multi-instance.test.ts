import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOKUP_VISIBILITY_MS, postEvent, sampleEvent, startHarness, within, type Harness, type TestAccount } from '../support/harness.ts';
import { redisUnreachable, TEST_REDIS_URL } from '../support/redis.ts';
import { TEST_STORE } from '../support/test-database.ts';
import { makeUser, WebClient } from '../dashboard/web-client.ts';

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
    // Few sign-in guesses, so that one test can spend them all across the two instances.
    const locks = { signInLocks: { perEmail: { short: 3, long: 50 } } };
    a = await startHarness({ REDIS_URL: TEST_REDIS_URL }, locks);
    b = await startHarness({ DATABASE_URL: a.config.databaseUrl, REDIS_URL: TEST_REDIS_URL }, locks);
  });
  afterAll(async () => {
    await b.app.close();
    await b.services.close();
    await a?.close();
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

  // What an attacker's probe tried on one instance, across two.
  it('a sign-in lock holds on both: guesses at either count, and the right password is refused at either', async () => {
    const { email, password } = await makeUser(a, (await a.account()).account.account_id);
    expect((await new WebClient(a.url).signIn(email, 'guess 1')).status).toBe(401);
    expect((await new WebClient(b.url).signIn(email, 'guess 2')).status).toBe(401);
    expect((await new WebClient(a.url).signIn(email, 'guess 3')).status).toBe(401);
    expect((await new WebClient(b.url).signIn(email, password)).status).toBe(429);
    expect((await new WebClient(a.url).signIn(email, password)).status).toBe(429);
  });

  it('an invitation link works once, on whichever instance it is opened, and its session on both', async () => {
    const who = await a.account();
    const issued = await a.services.users.invite({ accountId: who.account.account_id, email: `invited-${Date.now()}@example.test`, role: 'owner' });
    const path = new URL(issued.link).pathname;
    const browser = new WebClient(b.url);
    expect((await browser.get(path)).status).toBe(200);
    expect((await browser.post(path, { password: 'chosen on instance b', confirm: 'chosen on instance b' })).status).toBe(303);
    expect((await new WebClient(a.url).get(path)).status).toBe(404);
    const signedIn = new WebClient(a.url);
    expect((await signedIn.signIn(issued.user.email, 'chosen on instance b')).status).toBe(303);
    // The session is kept in the store: the other instance knows it.
    const elsewhere = new WebClient(b.url);
    for (const [name, value] of signedIn.cookies) elsewhere.cookies.set(name, value);
    expect((await elsewhere.get('/overview')).status).toBe(200);
  });

  it('an ingest URL revoked on one instance is refused by the other on its next request', async () => {
    const who = await a.account();
    const { id, ingest_url } = await a.services.ingestUrls.create({ accountId: who.account.account_id, name: 'node' });
    const path = new URL(ingest_url).pathname;
    const ingest = () => fetch(`${b.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: JSON.stringify(sampleEvent()) });
    expect((await ingest()).status).toBe(201);
    await a.services.ingestUrls.revoke(id);
    expect((await ingest()).status).toBe(404);
  });
});

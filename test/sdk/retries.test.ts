import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TollwatchError } from '../../sdk/src/index.ts';
import { startAnsweringProxy, type AnsweringProxy } from '../support/answering-proxy.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { sdkEvent, sdkFor } from './sdk-client.ts';

const unavailable = (retryAfter: string) => ({
  status: 503,
  headers: { 'content-type': 'application/problem+json', 'retry-after': retryAfter },
  body: JSON.stringify({ type: 'http://tollwatch.test/problems#unavailable', title: 'Unavailable', status: 503, detail: 'try later', error: 'unavailable' }),
});

/** Retries with backoff against a real server, through a proxy that fails on request (docs/api.md §4–§5, §9). */
describe('SDK retries', () => {
  let h: Harness;
  let proxy: AnsweringProxy | undefined;

  beforeAll(async () => {
    h = await startHarness();
    // One lookup a second: the second lookup within a second is refused with Retry-After.
    await h.services.plans.save({ name: 'one_per_second', maySubmit: false, lookups: { limit: 1, windowSeconds: 1 }, submissions: null, maxClients: null, eventReads: { limit: 1e9, windowSeconds: 3600 } });
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(() => h?.close());

  it('waits out a 503 for its Retry-After, then succeeds', async () => {
    let refused = 0;
    proxy = await startAnsweringProxy(h.url, (r) => (r.path === '/api/events' && refused++ === 0 ? unavailable('1') : 'forward'));
    const { client } = sdkFor(proxy, await h.account());
    const started = performance.now();
    expect(await client.submitEvent(sdkEvent())).toMatchObject({ status: 'created' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    expect(proxy.requests.filter((r) => r.path === '/api/events')).toHaveLength(2);
  });

  it('backs off on network errors; an answer lost after the server stored the event comes back as a replay', async () => {
    proxy = await startAnsweringProxy(h.url, (r, i) => (r.path === '/api/events' && i <= 2 ? 'forward-then-reset' : 'forward'));
    const who = await h.account();
    const { client } = sdkFor(proxy, who);
    const event = sdkEvent();
    expect(await client.submitEvent(event)).toMatchObject({ status: 'replayed' });
    // The token request, two submissions whose answers were lost, and the one answered.
    expect(proxy.requests.map((r) => r.path)).toEqual(['/oauth/token', '/api/events', '/api/events', '/api/events']);
    const page = await client.listEventsPage();
    expect(page.data.map((e) => e.event_uuid)).toEqual([event.event_uuid]);
  });

  it('gives up after maxAttempts, throwing the last problem with its Retry-After', async () => {
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? unavailable('0') : 'forward'));
    const { client } = sdkFor(proxy, await h.account(), { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 } });
    const error = await client.lookupPhoneNumber('+15550100').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TollwatchError);
    expect(error).toMatchObject({ status: 503, error: 'unavailable', retryAfter: 0, detail: 'try later' });
    expect(proxy.requests.filter((r) => r.path.startsWith('/api/'))).toHaveLength(3);
  });

  it('throws the network error itself once the tries are spent', async () => {
    proxy = await startAnsweringProxy(h.url, () => 'forward');
    const { client } = sdkFor(proxy, await h.account(), { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    await client.lookupIpAddress('192.0.2.1');
    await proxy.close();
    proxy = undefined;
    await expect(client.lookupIpAddress('192.0.2.1')).rejects.toThrow(TypeError);
  });

  it('waits out a plan’s 429 for its Retry-After, and counts the allowance left', async () => {
    const { client, counts } = sdkFor(h, await h.account({ plan: 'one_per_second' }));
    const first = await client.lookupPhoneNumber('+15550100');
    expect(first.rateLimit).toMatchObject({ policy: 'lookups', remaining: 0, quota: 1, windowSeconds: 1 });
    // Refused with Retry-After, waited for (past the lookups' default deadline, so with one of its own), then answered.
    const second = await client.lookupPhoneNumber('+15550100', { deadlineMs: 30_000 });
    expect(second).toMatchObject({ found: false });
    expect(second.rateLimit).toMatchObject({ policy: 'lookups', remaining: 0 });
    expect(counts.apiRequests).toBe(3);
  });

  it('does not sleep through a Retry-After longer than maxRetryAfterSeconds: the 429 is thrown at once', async () => {
    const { client, counts } = sdkFor(h, await h.account({ plan: 'tester' }));
    for (let i = 0; i < 5; i++) await client.lookupIpAddress('192.0.2.1');
    const started = performance.now();
    const error = await client.lookupIpAddress('192.0.2.1').catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(error).toMatchObject({ name: 'TollwatchError', status: 429, error: 'rate_limited' });
    expect((error as TollwatchError).retryAfter).toBeGreaterThan(60);
    expect(counts.apiRequests).toBe(6);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LOOKUP_DEADLINE_MS, DeadlineExceededError, TollwatchError, type RetryNotice } from '../../sdk/src/index.ts';
import { startAnsweringProxy, type AnsweringProxy } from '../support/answering-proxy.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { sdkFor } from './sdk-client.ts';

const unavailable = (retryAfter: string) => ({
  status: 503,
  headers: { 'content-type': 'application/problem+json', 'retry-after': retryAfter },
  body: JSON.stringify({ type: 'http://tollwatch.test/problems#unavailable', title: 'Unavailable', status: 503, detail: 'try later', error: 'unavailable' }),
});

/**
 * A call on a call path has a budget (docs/clients.md, "Bounding a call"): the SDK ends it within
 * its deadline or at its caller's signal, whatever the server does. Upper bounds on elapsed time
 * here are generous (seconds over the budget): they tell "ended at its bound" from "waited out
 * the retries" (tens of seconds), not how fast.
 */
describe('SDK call bounds', () => {
  let h: Harness;
  let proxy: AnsweringProxy | undefined;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TOKEN_TTL: '60' });
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(() => h?.close());

  it('a lookup to a server that never answers fails with DeadlineExceededError at the default deadline', async () => {
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? 'hang' : 'forward'));
    const { client } = sdkFor(proxy, await h.account(), { retry: {}, lookupDeadlineMs: undefined });
    const started = performance.now();
    const error = await client.lookupPhoneNumber('+15550100').catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error).toMatchObject({ deadlineMs: DEFAULT_LOOKUP_DEADLINE_MS });
    expect(elapsed).toBeGreaterThanOrEqual(DEFAULT_LOOKUP_DEADLINE_MS - 5);
    expect(elapsed).toBeLessThan(DEFAULT_LOOKUP_DEADLINE_MS + 5_000);
  });

  it('a deadline covers the token request too, and a token request given up on is used by the next call', async () => {
    let release!: () => void;
    const slowToken = new Promise<void>((resolve) => (release = resolve));
    proxy = await startAnsweringProxy(h.url, (r) => (r.path === '/oauth/token' ? { forwardAfter: slowToken } : 'forward'));
    const { client, counts } = sdkFor(proxy, await h.account());
    await expect(client.lookupIpAddress('192.0.2.1', { deadlineMs: 150 })).rejects.toBeInstanceOf(DeadlineExceededError);
    release();
    expect(await client.lookupIpAddress('192.0.2.1', { deadlineMs: 60_000 })).toMatchObject({ found: false });
    expect(counts.tokenRequests).toBe(1);
  });

  it('a Retry-After that would end past the deadline is not waited for: the answer is thrown at once', async () => {
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? unavailable('2') : 'forward'));
    const { client } = sdkFor(proxy, await h.account());
    const started = performance.now();
    const error = await client.lookupPhoneNumber('+15550100', { deadlineMs: 500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TollwatchError);
    expect(error).toMatchObject({ status: 503, retryAfter: 2 });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(proxy.requests.filter((r) => r.path.startsWith('/api/'))).toHaveLength(1);
  });

  it('submissions and reads have no deadline unless given one: a Retry-After within the policy is waited out', async () => {
    let refused = 0;
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/events') && refused++ === 0 ? unavailable('1') : 'forward'));
    const { client } = sdkFor(proxy, await h.account());
    expect((await client.listEventsPage()).data).toEqual([]);
    expect(proxy.requests.filter((r) => r.path.startsWith('/api/events'))).toHaveLength(2);
  });

  it('lookupDeadlineMs: Infinity gives lookups the retry policy alone', async () => {
    let refused = 0;
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') && refused++ === 0 ? unavailable('1') : 'forward'));
    const { client } = sdkFor(proxy, await h.account(), { lookupDeadlineMs: Infinity });
    expect(await client.lookupPhoneNumber('+15550100')).toMatchObject({ found: false });
    expect(proxy.requests.filter((r) => r.path.startsWith('/api/'))).toHaveLength(2);
  });

  it('a per-try timeout is a network error worth another try within the deadline', async () => {
    proxy = await startAnsweringProxy(h.url, (r, i) => (r.path.startsWith('/api/') && i === 1 ? 'hang' : 'forward'));
    const notices: RetryNotice[] = [];
    const { client } = sdkFor(proxy, await h.account(), { onRetry: (n) => notices.push(n) });
    expect(await client.lookupPhoneNumber('+15550100', { deadlineMs: 30_000, timeoutMs: 200 })).toMatchObject({ found: false });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ method: 'GET', attempt: 1 });
    expect((notices[0]!.error as Error).name).toBe('TimeoutError');
  });

  it('the caller’s signal ends a try in flight with the signal’s reason, not a retry', async () => {
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? 'hang' : 'forward'));
    const { client } = sdkFor(proxy, await h.account());
    const controller = new AbortController();
    const call = client.lookupIpAddress('192.0.2.1', { signal: controller.signal, deadlineMs: 60_000 });
    await expect.poll(() => proxy!.requests.some((r) => r.path.startsWith('/api/'))).toBe(true);
    controller.abort(new Error('the caller hung up'));
    await expect(call).rejects.toThrow('the caller hung up');
    expect(proxy.requests.filter((r) => r.path.startsWith('/api/'))).toHaveLength(1);
  });

  it('the caller’s signal ends a wait between tries too', async () => {
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') ? unavailable('30') : 'forward'));
    const controller = new AbortController();
    const { client } = sdkFor(proxy, await h.account(), { onRetry: () => controller.abort(new Error('stop waiting')) });
    const started = performance.now();
    await expect(client.submitEvents([], { signal: controller.signal })).resolves.toMatchObject({ created: 0 });
    // An empty list sends nothing; one event does.
    await expect(client.listEventsPage({}, { signal: controller.signal })).rejects.toThrow('stop waiting');
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('onRetry is told of every wait: the try, the status, the Retry-After and the delay', async () => {
    let refused = 0;
    proxy = await startAnsweringProxy(h.url, (r) => (r.path.startsWith('/api/') && refused++ < 2 ? unavailable('0') : 'forward'));
    const notices: RetryNotice[] = [];
    const { client } = sdkFor(proxy, await h.account(), { onRetry: (n) => notices.push(n) });
    await client.lookupIpAddress('192.0.2.1');
    expect(notices.map((n) => [n.attempt, n.status, n.retryAfterSeconds])).toEqual([
      [1, 503, 0],
      [2, 503, 0],
    ]);
    expect(notices[0]!.url).toBe(`${proxy.url}/api/ip-addresses/192.0.2.1`);
    for (const n of notices) expect(n.delayMs).toBeGreaterThanOrEqual(0);
  });

  it('a token due for renewal is used while its successor is fetched: the call does not wait for the token endpoint', async () => {
    let clock = Date.now();
    let release!: () => void;
    let tokens = 0;
    const slowSecond = new Promise<void>((resolve) => (release = resolve));
    proxy = await startAnsweringProxy(h.url, (r) => (r.path === '/oauth/token' && tokens++ === 1 ? { forwardAfter: slowSecond } : 'forward'));
    const { client, counts } = sdkFor(proxy, await h.account(), { now: () => clock });
    await client.lookupIpAddress('192.0.2.1');
    clock += 31_000;
    // The renewal hangs until released, yet the lookup is answered with the old token.
    expect(await client.lookupIpAddress('192.0.2.1', { deadlineMs: 60_000 })).toMatchObject({ found: false });
    expect(counts.tokenRequests).toBe(2);
    // A token close to its end is not used: the call waits for the renewal under way.
    clock += 50_000;
    const waiting = client.lookupIpAddress('192.0.2.1', { deadlineMs: 60_000 });
    release();
    expect(await waiting).toMatchObject({ found: false });
    expect(counts.tokenRequests).toBe(2);
    // And past the renewed token's own end, a new one is asked for before the call.
    clock += 40_000;
    expect(await client.lookupIpAddress('192.0.2.1', { deadlineMs: 60_000 })).toMatchObject({ found: false });
    expect(counts.tokenRequests).toBe(3);
  });

  it('reads report the event_reads allowance left, like the other calls', async () => {
    const { client } = sdkFor(h, await h.account());
    const page = await client.listEventsPage({ limit: 1 });
    expect(page.rateLimit).toMatchObject({ policy: 'event_reads' });
    expect(page.rateLimit!.remaining).toBeGreaterThan(0);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthError, TollwatchError, type SavedToken, type TokenCache } from '../../sdk/src/index.ts';
import { SENTRYPEER_AUDIENCE, startHarness, type Harness } from '../support/harness.ts';
import { sdkFor } from './sdk-client.ts';

/** The SDK's token handling against a real server (docs/api.md §2–§3). */
describe('SDK tokens', () => {
  let h: Harness;

  beforeAll(async () => {
    // The shortest lifetime the server allows, so renewal happens within a test's clock.
    h = await startHarness({ TOLLWATCH_TOKEN_TTL: '60' });
  });
  afterAll(() => h?.close());

  it('fetches one token, shares it among concurrent requests, and caches it', async () => {
    const { client, counts } = sdkFor(h, await h.account());
    await Promise.all([client.lookupIpAddress('192.0.2.1'), client.lookupIpAddress('192.0.2.2'), client.lookupPhoneNumber('+15550100')]);
    await client.lookupIpAddress('192.0.2.3');
    expect(counts.tokenRequests).toBe(1);
    expect(counts.apiRequests).toBe(4);
  });

  it('renews the token before it expires (a 60 s token at half its lifetime)', async () => {
    let clock = Date.now();
    const { client, counts } = sdkFor(h, await h.account(), { now: () => clock });
    await client.lookupIpAddress('192.0.2.1');
    clock += 29_000;
    await client.lookupIpAddress('192.0.2.1');
    expect(counts.tokenRequests).toBe(1);
    clock += 2_000;
    await client.lookupIpAddress('192.0.2.1');
    expect(counts.tokenRequests).toBe(2);
    // Every answer was a real one: no request went out with a token the server refused.
    expect(counts.apiRequests).toBe(3);
  });

  it('on a 401 renews once and retries: a secret rotated on the server and read from a secret source', async () => {
    const who = await h.account();
    let secret = who.clientSecret;
    const { client, counts } = sdkFor(h, who, { clientSecret: () => secret });
    expect((await client.lookupIpAddress('192.0.2.1')).found).toBe(false);
    secret = (await h.services.accounts.resetSecret(who.clientId)).client_secret;
    // The cached token is revoked: 401, a new token with the new secret, the request again.
    expect((await client.lookupIpAddress('192.0.2.1')).found).toBe(false);
    expect(counts).toEqual({ tokenRequests: 2, apiRequests: 3 });
  });

  it('renews only once: a secret reset the client does not know ends in OAuthError invalid_client', async () => {
    const who = await h.account();
    const { client, counts } = sdkFor(h, who);
    await client.lookupIpAddress('192.0.2.1');
    await h.services.accounts.resetSecret(who.clientId);
    const error = await client.lookupIpAddress('192.0.2.1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ status: 401, error: 'invalid_client', error_description: expect.any(String) });
    expect(counts).toEqual({ tokenRequests: 2, apiRequests: 2 });
  });

  it('throws the API’s 401 when even a fresh token is refused', async () => {
    const who = await h.account();
    // A fetch that spoils every bearer token: the server refuses each one, fresh or not.
    const { client, counts } = sdkFor(h, who, {
      fetch: (url, init) => {
        const headers = new Headers(init.headers);
        if (headers.has('authorization')) headers.set('authorization', `${headers.get('authorization')}x`);
        return fetch(url, { ...init, headers });
      },
    });
    const error = await client.lookupIpAddress('192.0.2.1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TollwatchError);
    expect(error).toMatchObject({ status: 401, error: 'invalid_token', type: expect.stringContaining('/problems#invalid_token') });
    expect(counts).toEqual({ tokenRequests: 2, apiRequests: 2 });
  });

  it('asks for the audience given, and reports one the server refuses', async () => {
    const who = await h.account();
    expect((await sdkFor(h, who, { audience: SENTRYPEER_AUDIENCE }).client.lookupIpAddress('192.0.2.1')).found).toBe(false);
    const refused = await sdkFor(h, who, { audience: 'https://elsewhere.example/api' })
      .client.lookupIpAddress('192.0.2.1')
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'OAuthError', status: 400, error: 'invalid_target' });
  });

  it('reports wrong credentials as OAuthError invalid_client, without retrying them', async () => {
    const who = await h.account();
    const { client, counts } = sdkFor(h, { ...who, clientSecret: 'wrong' });
    const error = await client.submitEvent({} as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(counts).toEqual({ tokenRequests: 1, apiRequests: 0 });
  });

  it('keeps tokens in a token cache between clients: the next client asks for none, and a revoked one is replaced there', async () => {
    const who = await h.account();
    let saved: SavedToken | undefined;
    const tokenCache: TokenCache = { load: () => saved, save: (token) => void (saved = token) };
    const first = sdkFor(h, who, { tokenCache });
    await first.client.lookupIpAddress('192.0.2.1');
    expect(first.counts.tokenRequests).toBe(1);
    expect(saved!.expiresAt).toBeGreaterThan(Date.now() + 50_000);
    // Calls made together all wait for the one read of the cache.
    const second = sdkFor(h, who, { tokenCache });
    await Promise.all([second.client.lookupIpAddress('192.0.2.1'), second.client.lookupIpAddress('192.0.2.2'), second.client.lookupPhoneNumber('+15550100')]);
    expect(second.counts).toEqual({ tokenRequests: 0, apiRequests: 3 });
    // The cached token revoked on the server: 401, a new token, saved in its place.
    const revoked = saved!.accessToken;
    await h.services.accounts.resetSecret(who.clientId).then(() => undefined);
    const third = sdkFor(h, who, { tokenCache, clientSecret: () => 'wrong' });
    const error = await third.client.lookupIpAddress('192.0.2.1').catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'OAuthError', error: 'invalid_client' });
    expect(third.counts).toEqual({ tokenRequests: 1, apiRequests: 1 });
    expect(saved!.accessToken).toBe(revoked);
  });

  it('a cache that fails, or holds a token near its end, is as no cache', async () => {
    const who = await h.account();
    const broken = sdkFor(h, who, { tokenCache: { load: () => Promise.reject(new Error('disk gone')), save: () => { throw new Error('read-only'); } } });
    expect((await broken.client.lookupIpAddress('192.0.2.1')).found).toBe(false);
    expect(broken.counts.tokenRequests).toBe(1);
    const stale = sdkFor(h, who, { tokenCache: { load: () => ({ accessToken: 'old', expiresAt: Date.now() + 5_000 }), save: () => {} } });
    expect((await stale.client.lookupIpAddress('192.0.2.1')).found).toBe(false);
    expect(stale.counts).toEqual({ tokenRequests: 1, apiRequests: 1 });
  });
});

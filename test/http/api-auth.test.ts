import { request } from 'node:http';
import { generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessTokens } from '../../src/oauth/access-tokens.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signToken } from '../support/tokens.ts';

async function expectInvalidToken(res: Response, { credentialsSent = true } = {}) {
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  // RFC 6750 §3.1: an error attribute only when credentials were sent.
  if (credentialsSent) expect(res.headers.get('www-authenticate')).toMatch(/^Bearer [^,]*(, [a-z_]+="[^"]*")*, error="invalid_token"/);
  else expect(res.headers.get('www-authenticate')).not.toContain('error=');
  expect(res.headers.get('api-version')).toBe('1');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status: 401, error: 'invalid_token', title: expect.any(String), type: expect.any(String) });
}

describe('authenticating /api calls (docs/api.md §3)', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
  });
  afterAll(() => h?.close());

  const lookup = (authorization?: string) =>
    fetch(`${h.url}/api/phone-numbers/100`, { headers: authorization ? { authorization } : {} });

  it('accepts a bearer token', async () => {
    const res = await lookup(`Bearer ${await who.token()}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('api-version')).toBe('1');
  });

  it('challenges Bearer with its resource metadata, and Basic while Basic is on; no error attribute without credentials', async () => {
    const bare = await lookup();
    await expectInvalidToken(bare.clone(), { credentialsSent: false });
    expect(bare.headers.get('www-authenticate')).toBe(
      'Bearer realm="tollwatch", resource_metadata="http://tollwatch.test/.well-known/oauth-protected-resource/api", Basic realm="tollwatch", charset="UTF-8"',
    );
    const wrong = await lookup('Bearer not.a.jwt');
    expect(wrong.headers.get('www-authenticate')).toBe(
      'Bearer realm="tollwatch", resource_metadata="http://tollwatch.test/.well-known/oauth-protected-resource/api", error="invalid_token", Basic realm="tollwatch", charset="UTF-8"',
    );
    const off = await startHarness({ TOLLWATCH_BASIC_AUTH: 'off' });
    try {
      const res = await fetch(`${off.url}/api/phone-numbers/100`);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="tollwatch", resource_metadata="http://tollwatch.test/.well-known/oauth-protected-resource/api"');
    } finally {
      await off.close();
    }
    // The metadata names the audience a token request gets by default, and where to ask.
    const metadata = await (await fetch(`${h.url}/.well-known/oauth-protected-resource/api`)).json();
    expect(metadata).toEqual({
      resource: 'http://tollwatch.test/api',
      authorization_servers: ['http://tollwatch.test'],
      scopes_supported: ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses', 'manage:integrations', 'manage:allowlist', 'write:reports'],
      bearer_methods_supported: ['header'],
      resource_documentation: 'http://tollwatch.test/docs',
    });
    expect(await (await fetch(`${h.url}/.well-known/oauth-protected-resource`)).json()).toEqual(metadata);
  });

  it('401 for a missing, malformed or foreign-scheme credential', async () => {
    await expectInvalidToken(await lookup(), { credentialsSent: false });
    await expectInvalidToken(await lookup('Bearer'));
    await expectInvalidToken(await lookup('Bearer not.a.jwt'));
    await expectInvalidToken(await lookup('Token abc'));
    await expectInvalidToken(await lookup('Basic !!!notbase64'));
    await expectInvalidToken(await lookup(`Basic ${Buffer.from('twc_\u0000x:secret').toString('base64')}`));
  });

  it('401 for a token signed by another key, even with our kid', async () => {
    const real = await who.token();
    const { kid } = JSON.parse(Buffer.from(real.split('.')[0]!, 'base64url').toString()) as { kid: string };
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await signToken(who, { kid, key: privateKey, scope: 'read:phone-numbers' });
    await expectInvalidToken(await lookup(`Bearer ${forged}`));
  });

  it('401 for an unsigned (alg none) token', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');
    const payload = Buffer.from(
      JSON.stringify({ azp: who.clientId, account_id: who.account.account_id, scope: 'read:phone-numbers', ver: 1, exp: 9e9 }),
    ).toString('base64url');
    await expectInvalidToken(await lookup(`Bearer ${header}.${payload}.`));
  });

  it('honours a token naming its client in azp, as tokens issued before RFC 9068 claims did, until it expires', async () => {
    const { kid, privateKey } = h.services.signingKeys.current();
    for (const clientClaim of ['client_id', 'azp'] as const) {
      const token = await signToken(who, { kid, key: privateKey, scope: 'read:phone-numbers', clientClaim });
      expect((await lookup(`Bearer ${token}`)).status, clientClaim).toBe(404);
    }
  });

  it('401 for an expired token, whose signature is otherwise good', async () => {
    const keys = h.services.signingKeys;
    const shortLived = new AccessTokens(keys, { issuer: 'http://tollwatch.test', audiences: ['http://tollwatch.test/api'], ttlSeconds: 1 });
    const token = await shortLived.issue({
      clientId: who.clientId,
      accountId: who.account.account_id,
      permissions: ['read:phone-numbers'],
      secretVersion: 1,
      audience: 'http://tollwatch.test/api',
    });
    expect((await lookup(`Bearer ${token}`)).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await expectInvalidToken(await lookup(`Bearer ${token}`));
  });

  it('401 for a tampered token', async () => {
    const [head, body, sig] = (await who.token()).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    claims.scope = 'write:events read:events read:phone-numbers read:ip-addresses';
    claims.account_id = 'someone-else';
    await expectInvalidToken(await lookup(`Bearer ${head}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`));
  });

  it('401 for a good token presented to a server with another issuer or audience', async () => {
    const token = await who.token();
    const variants: Array<Record<string, string>> = [{ TOLLWATCH_ISSUER: 'http://other.test' }, { TOLLWATCH_AUDIENCE: 'http://elsewhere.test/api' }];
    for (const env of variants) {
      // Same store, so the same signing keys: only the issuer or audience check can refuse it.
      const other = await startHarness({ DATABASE_URL: h.config.databaseUrl, ...env });
      try {
        await expectInvalidToken(await fetch(`${other.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } }));
      } finally {
        await other.app.close();
        await other.services.close();
      }
    }
  });

  it('accepts Basic client credentials when enabled, refuses them when off', async () => {
    const basic = `Basic ${Buffer.from(`${who.clientId}:${who.clientSecret}`).toString('base64')}`;
    expect((await lookup(basic)).status).toBe(404);
    await expectInvalidToken(await lookup(`Basic ${Buffer.from(`${who.clientId}:wrong`).toString('base64')}`));

    const off = await startHarness({ DATABASE_URL: h.config.databaseUrl, TOLLWATCH_BASIC_AUTH: 'off' });
    try {
      await expectInvalidToken(await fetch(`${off.url}/api/phone-numbers/100`, { headers: { authorization: basic } }));
    } finally {
      await off.app.close();
      await off.services.close();
    }
  });

  it('403 insufficient_scope when the client lacks the permission', async () => {
    const reader = await h.account({ permissions: ['read:ip-addresses'] });
    const res = await reader.api('/api/phone-numbers/100');
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(await res.json()).toMatchObject({ error: 'insufficient_scope', status: 403 });
    expect((await postEvent(reader, sampleEvent())).status).toBe(403);
    expect((await reader.api('/api/events')).status).toBe(403);
    expect((await reader.api('/api/ip-addresses/192.0.2.1')).status).toBe(404);
  });

  it('a secret reset revokes earlier tokens at once; new ones work', async () => {
    const victim = await h.account();
    const token = await victim.token();
    expect((await lookup(`Bearer ${token}`)).status).toBe(404);
    const { client_secret } = await h.services.accounts.resetSecret(victim.clientId);
    await expectInvalidToken(await lookup(`Bearer ${token}`));
    // Basic with the old secret is refused too; the new secret gets a working token.
    await expectInvalidToken(await lookup(`Basic ${Buffer.from(`${victim.clientId}:${victim.clientSecret}`).toString('base64')}`));
    const res = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: victim.clientId, client_secret: client_secret, audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' }),
    });
    const fresh = ((await res.json()) as { access_token: string }).access_token;
    expect((await lookup(`Bearer ${fresh}`)).status).toBe(404);
    // The old secret no longer gets a token.
    const old = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: victim.clientId, client_secret: victim.clientSecret, audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' }),
    });
    expect(old.status).toBe(401);
  });

  it('deleting a client revokes its tokens at once', async () => {
    const gone = await h.account();
    const token = await gone.token();
    expect((await lookup(`Bearer ${token}`)).status).toBe(404);
    await h.services.accounts.deleteClient(gone.clientId);
    await expectInvalidToken(await lookup(`Bearer ${token}`));
  });

  it('disabling an account refuses its tokens and its token requests', async () => {
    const off = await h.account();
    const token = await off.token();
    await h.services.accounts.setDisabled(off.account.account_id, true);
    await expectInvalidToken(await lookup(`Bearer ${token}`));
    await expect(off.token()).rejects.toThrow(/401/);
  });

  it('disable → enable leaves earlier tokens refused for good, here and on another instance; new tokens work', async () => {
    const owner = await h.account();
    const id = owner.account.account_id;
    const before = await owner.token();
    // A second instance on the same store that has seen the token verify: its cache holds the
    // client as it was, and must still refuse the token once its entry is read again.
    const other = await startHarness({ DATABASE_URL: h.config.databaseUrl });
    const elsewhere = (token: string) => fetch(`${other.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } });
    try {
      expect((await elsewhere(before)).status).toBe(404);
      await h.services.accounts.setDisabled(id, true);
      await expectInvalidToken(await lookup(`Bearer ${before}`));
      await h.services.accounts.setDisabled(id, false);
      await expectInvalidToken(await lookup(`Bearer ${before}`));
      // Enabling an enabled account changes nothing either.
      await h.services.accounts.setDisabled(id, false);
      await expectInvalidToken(await lookup(`Bearer ${before}`));
      const after = await owner.token();
      expect((await lookup(`Bearer ${after}`)).status).toBe(404);
      // Past the credentials cache bound (1 s, src/services.ts) the other instance agrees.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await expectInvalidToken(await elsewhere(before));
      expect((await elsewhere(after)).status).toBe(404);
      // The client's secret itself was never revoked: Basic works again, as a new token does.
      const basic = `Basic ${Buffer.from(`${owner.clientId}:${owner.clientSecret}`).toString('base64')}`;
      expect((await lookup(basic)).status).toBe(404);
    } finally {
      await other.app.close();
      await other.services.close();
    }
  });

  it('a reset or a deletion stays in force through a later disable and enable', async () => {
    const owner = await h.account();
    const id = owner.account.account_id;
    const beforeReset = await owner.token();
    await h.services.accounts.resetSecret(owner.clientId);
    const second = await h.services.accounts.createClient({ accountId: id, name: 'second' });
    await h.services.accounts.deleteClient(second.client_id);
    await h.services.accounts.setDisabled(id, true);
    await h.services.accounts.setDisabled(id, false);
    await expectInvalidToken(await lookup(`Bearer ${beforeReset}`));
    await expectInvalidToken(await lookup(`Basic ${Buffer.from(`${owner.clientId}:${owner.clientSecret}`).toString('base64')}`));
    await expectInvalidToken(await lookup(`Basic ${Buffer.from(`${second.client_id}:${second.client_secret}`).toString('base64')}`));
  });

  it('every unknown /api path needs authentication, then answers a 404 problem', async () => {
    await expectInvalidToken(await fetch(`${h.url}/api/nothing-here`), { credentialsSent: false });
    const res = await who.api('/api/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(await res.json()).toMatchObject({ error: 'not_found', status: 404 });
  });

  it('authenticates /api paths the router cannot read before saying what is wrong with them', async () => {
    const long = '1'.repeat(513);
    const unreadable = [
      '/api/phone-numbers/%',
      '/api/phone-numbers/%FF?x=1',
      `/api/phone-numbers/${long}`,
      '/api/ip-addresses/%',
      `/api/ip-addresses/${long}`,
      '/api/events/%',
      `/api/events/${'a'.repeat(600)}`,
      '/api/nothing-here/%',
    ];
    for (const path of unreadable) await expectInvalidToken(await fetch(`${h.url}${path}`), { credentialsSent: false });
    // The absolute form of a request target is routed by its path: authenticated too.
    const absolute = await new Promise<{ status: number; challenge: string | undefined }>((resolve, reject) => {
      const { port } = new URL(h.url);
      request({ host: '127.0.0.1', port, path: 'http://tollwatch.test/api/phone-numbers/%' }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'] });
      })
        .on('error', reject)
        .end();
    });
    expect(absolute).toEqual({ status: 401, challenge: expect.stringContaining('Bearer realm="tollwatch"') });

    // Then the route's permission, as for any value.
    const ipReader = await h.account({ permissions: ['read:ip-addresses'] });
    const forbidden = await ipReader.api('/api/phone-numbers/%');
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toMatchObject({ error: 'insufficient_scope' });

    // Then the right problem, saying truthfully what is wrong.
    const answers: Array<[string, number, string, RegExp]> = [
      ['/api/phone-numbers/%', 400, 'invalid_phone_number', /phone number .* not valid URL encoding/],
      ['/api/phone-numbers/%FF?x=1', 400, 'invalid_phone_number', /not valid URL encoding/],
      [`/api/phone-numbers/${long}`, 400, 'invalid_phone_number', /phone number .* longer than 512 characters/],
      [`/api/phone-numbers/${encodeURIComponent('☎'.repeat(513))}`, 400, 'invalid_phone_number', /longer than 512/],
      ['/api/ip-addresses/%', 400, 'invalid_ip_address', /IP address .* not valid URL encoding/],
      [`/api/ip-addresses/${long}`, 400, 'invalid_ip_address', /IP address .* longer than 512 characters/],
      ['/api/events/%', 404, 'not_found', /no such event/],
      [`/api/events/${'a'.repeat(600)}`, 404, 'not_found', /no such event/],
      ['/api/nothing-here/%', 404, 'not_found', /no such resource/],
    ];
    for (const [path, status, error, detail] of answers) {
      const res = await who.api(path);
      expect(res.status, path.slice(0, 40)).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.headers.get('api-version')).toBe('1');
      const body = (await res.json()) as { error: string; detail: string };
      expect(body.error, path.slice(0, 40)).toBe(error);
      expect(body.detail, path.slice(0, 40)).toMatch(detail);
    }
    // Outside /api nothing changes: a plain 400.
    expect((await fetch(`${h.url}/%`)).status).toBe(400);
  });

  it('serves the OpenAPI document and health without authentication', async () => {
    const openapi = await fetch(`${h.url}/api/openapi.json`);
    expect(openapi.status).toBe(200);
    const doc = (await openapi.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/events', '/api/phone-numbers/{phone_number}', '/api/ip-addresses/{ip_address}', '/oauth/token']),
    );
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${h.url}/docs`, { redirect: 'manual' })).status).toBeLessThan(400);
  });
});

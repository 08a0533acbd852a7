import { decodeJwt, decodeProtectedHeader, createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SENTRYPEER_AUDIENCE, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';

const AUDIENCE = 'http://tollwatch.test/api';

function tokenRequest(h: Harness, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('POST /oauth/token (docs/api.md §2)', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
  });
  afterAll(() => h?.close());

  const valid = () => ({
    client_id: who.clientId,
    client_secret: who.clientSecret,
    audience: AUDIENCE,
    grant_type: 'client_credentials',
  });

  it('issues a signed JWT with every contract claim, as JSON, not cached', async () => {
    const res = await tokenRequest(h, valid());
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 86400,
      scope: 'write:events read:events read:phone-numbers read:ip-addresses write:reports',
    });
    const token = body.access_token as string;
    const header = decodeProtectedHeader(token);
    expect(header.alg).toBe('ES256');
    expect(header.kid).toEqual(expect.any(String));
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      iss: 'http://tollwatch.test',
      sub: who.clientId,
      aud: AUDIENCE,
      client_id: who.clientId,
      scope: body.scope,
      account_id: who.account.account_id,
    });
    expect(claims.exp! - claims.iat!).toBe(86400);
    expect(claims.jti).toEqual(expect.any(String));

    // The published JWKS verifies it: a third party can check our tokens.
    const jwks = (await (await fetch(`${h.url}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.every((k) => !('d' in k))).toBe(true);
    await expect(jwtVerify(token, createLocalJWKSet(jwks as never), { issuer: 'http://tollwatch.test', audience: AUDIENCE })).resolves.toBeTruthy();
  });

  it('accepts a form body and HTTP Basic client authentication (RFC 6749)', async () => {
    const form = new URLSearchParams({ ...valid() });
    const res = await tokenRequest(h, form.toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(200);

    const basic = Buffer.from(`${who.clientId}:${who.clientSecret}`).toString('base64');
    const viaBasic = await tokenRequest(
      h,
      new URLSearchParams({ audience: AUDIENCE, grant_type: 'client_credentials' }).toString(),
      { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    );
    expect(viaBasic.status).toBe(200);
  });

  it('reads a JSON body sent as text/plain, as /api/events does: what fetch sends for a string body', async () => {
    for (const contentType of ['text/plain', 'text/plain;charset=UTF-8']) {
      const res = await tokenRequest(h, valid(), { 'content-type': contentType });
      expect(res.status, contentType).toBe(200);
      expect(await res.json()).toMatchObject({ token_type: 'Bearer' });
    }
    const unreadable = await tokenRequest(h, '{"client_id":', { 'content-type': 'text/plain' });
    expect(unreadable.status).toBe(400);
    expect(await unreadable.json()).toEqual({ error: 'invalid_request', error_description: 'the request body could not be read' });
  });

  it('tells a client that sent JSON as a form to send it as application/json, rather than that client_id is missing', async () => {
    for (const body of [JSON.stringify(valid()), ` \n${JSON.stringify(valid())}`]) {
      const res = await tokenRequest(h, body, { 'content-type': 'application/x-www-form-urlencoded' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: 'invalid_request',
        error_description: 'the body looks like JSON sent as application/x-www-form-urlencoded; send it with Content-Type: application/json',
      });
    }
  });

  it('accepts the audience the SentryPeer node asks for when configured', async () => {
    const res = await tokenRequest(h, { ...valid(), audience: SENTRYPEER_AUDIENCE });
    expect(res.status).toBe(200);
    expect(decodeJwt(((await res.json()) as { access_token: string }).access_token).aud).toBe(SENTRYPEER_AUDIENCE);
  });

  it('answers an unknown client and a wrong secret identically', async () => {
    const unknown = await tokenRequest(h, { ...valid(), client_id: 'twc_nobody' });
    const wrong = await tokenRequest(h, { ...valid(), client_secret: 'tws_wrong' });
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    const a = await unknown.json();
    const b = await wrong.json();
    expect(a).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    expect(b).toEqual(a);
  });

  it.each([
    ['client_id missing', { client_id: undefined }],
    ['client_secret missing', { client_secret: undefined }],
    ['grant_type missing', { grant_type: undefined }],
    ['client_id not a string', { client_id: 42 }],
    ['audience not a string', { audience: ['x'] }],
    ['client_id with a NUL character', { client_id: 'twc_\u0000' }],
    ['client_secret with a NUL character', { client_secret: '\u0000' }],
  ])('400 invalid_request when %s', async (_name, change) => {
    const res = await tokenRequest(h, { ...valid(), ...change });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  });

  it.each([
    ['malformed JSON', '{"client_id":'],
    ['a JSON array', '[]'],
    ['a JSON string', '"x"'],
    ['an empty body', ''],
  ])('400 invalid_request for %s', async (_name, body) => {
    const res = await tokenRequest(h, body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('400 unsupported_grant_type for any other grant', async () => {
    for (const grant_type of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS']) {
      const res = await tokenRequest(h, { ...valid(), grant_type });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('unsupported_grant_type');
    }
  });

  it('400 invalid_target for an audience or resource not configured, or the two disagreeing', async () => {
    for (const change of [
      { audience: 'https://evil.example/api' },
      { audience: undefined, resource: 'https://evil.example/api' },
      { audience: AUDIENCE, resource: SENTRYPEER_AUDIENCE },
    ]) {
      const res = await tokenRequest(h, { ...valid(), ...change });
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_target', error_description: expect.any(String) });
    }
  });

  it('defaults the audience to the service API when none is named, and reads RFC 8707 resource like audience', async () => {
    const audienceOf = async (change: Record<string, unknown>) => {
      const res = await tokenRequest(h, { ...valid(), ...change });
      expect(res.status, JSON.stringify(change)).toBe(200);
      return decodeJwt(((await res.json()) as { access_token: string }).access_token).aud;
    };
    expect(await audienceOf({ audience: undefined })).toBe(AUDIENCE);
    expect(await audienceOf({ audience: '' })).toBe(AUDIENCE);
    expect(await audienceOf({ audience: undefined, resource: SENTRYPEER_AUDIENCE })).toBe(SENTRYPEER_AUDIENCE);
    expect(await audienceOf({ resource: AUDIENCE })).toBe(AUDIENCE);
    // A trailing slash names the same audience; the token carries it as configured.
    expect(await audienceOf({ audience: `${AUDIENCE}/` })).toBe(AUDIENCE);
    expect(await audienceOf({ audience: undefined, resource: `${SENTRYPEER_AUDIENCE}/` })).toBe(SENTRYPEER_AUDIENCE);
  });

  it('checks the credentials before anything else the request asks for', async () => {
    for (const change of [{ audience: undefined }, { audience: 'https://evil.example/api' }, { grant_type: 'password' }, { grant_type: undefined }, { scope: 'bogus' }]) {
      const res = await tokenRequest(h, { ...valid(), client_secret: 'tws_wrong', ...change });
      expect(res.status, JSON.stringify(change)).toBe(401);
      expect(await res.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    }
  });

  it('down-scopes to the permissions named in scope, and refuses one that does not exist or is not held', async () => {
    const granted = async (scope: string) => {
      const res = await tokenRequest(h, { ...valid(), scope });
      expect(res.status, scope).toBe(200);
      const body = (await res.json()) as { access_token: string; scope: string };
      expect(decodeJwt(body.access_token).scope).toBe(body.scope);
      return body.scope;
    };
    expect(await granted('read:events')).toBe('read:events');
    expect(await granted('read:ip-addresses  write:events')).toBe('write:events read:ip-addresses');
    expect(await granted('')).toBe('write:events read:events read:phone-numbers read:ip-addresses write:reports');
    const narrow = await h.account({ permissions: ['read:phone-numbers'] });
    for (const [client, scope] of [
      [who, 'bogus'],
      [who, 'read:events bogus'],
      [narrow, 'read:events'],
    ] as const) {
      const res = await tokenRequest(h, { ...valid(), client_id: client.clientId, client_secret: client.clientSecret, scope });
      expect(res.status, scope).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_scope', error_description: expect.any(String) });
    }
    // A down-scoped token is refused where it lacks the permission, though its client holds it.
    const res = await tokenRequest(h, { ...valid(), scope: 'read:ip-addresses' });
    const { access_token } = (await res.json()) as { access_token: string };
    const lookup = await fetch(`${h.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(lookup.status).toBe(403);
    expect(((await lookup.json()) as { error: string }).error).toBe('insufficient_scope');
  });

  it('401 invalid_client for Basic credentials that cannot be read, audited as a failure', async () => {
    const res = await tokenRequest(h, { audience: AUDIENCE, grant_type: 'client_credentials' }, {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from('no-colon-here').toString('base64')}`,
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="tollwatch"');
    expect(await res.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    // Failures are audited without holding the answer.
    const reasons = await eventually('the refusal audited', async () => (await h.services.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'token.refused').execute()).map((r) => JSON.parse(r.detail!).reason), (seen) => seen.includes('unreadable credentials'));
    expect(reasons).toContain('unreadable credentials');
  });

  it('refuses credentials sent both in the body and as Basic', async () => {
    const basic = Buffer.from(`${who.clientId}:${who.clientSecret}`).toString('base64');
    const res = await tokenRequest(h, valid(), { 'content-type': 'application/json', authorization: `Basic ${basic}` });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('publishes RFC 8414 metadata without authentication', async () => {
    const res = await fetch(`${h.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: 'http://tollwatch.test',
      token_endpoint: 'http://tollwatch.test/oauth/token',
      jwks_uri: 'http://tollwatch.test/.well-known/jwks.json',
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      // Required by RFC 8414; no authorization endpoint, so no response types.
      response_types_supported: [],
    });
    // No JWT client authentication is accepted, so no signing algorithms for it are claimed.
    expect(metadata).not.toHaveProperty('token_endpoint_auth_signing_alg_values_supported');
  });

  it('is described in the OpenAPI document: no bearer security, its body, its answers', async () => {
    const doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as {
      paths: Record<string, Record<string, any>>;
      components: { schemas: Record<string, any> };
    };
    const token = doc.paths['/oauth/token']!.post;
    // Every body is a named schema: what it names is what a client reads.
    const named = (schema: { $ref: string }) => doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')];
    // Client credentials are this endpoint's authentication: no token or /api Basic applies.
    expect(doc.paths['/api/events']!.post.security).toContainEqual({ oauth2: ['write:events'] });
    expect(token.security).toEqual([]);
    expect(Object.keys(token.requestBody.content)).toEqual(['application/json', 'text/plain', 'application/x-www-form-urlencoded']);
    for (const media of Object.values(token.requestBody.content) as Array<{ schema: { $ref: string } }>) {
      expect(media.schema).toEqual({ $ref: '#/components/schemas/TokenRequest' });
      expect(Object.keys(named(media.schema).properties).sort()).toEqual(['audience', 'client_id', 'client_secret', 'grant_type', 'resource', 'scope']);
      expect(named(media.schema).required.sort()).toEqual(['grant_type']);
    }
    expect(Object.keys(token.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '429']));
    expect(Object.keys(named(token.responses['200'].content['application/json'].schema).properties).sort()).toEqual([
      'access_token',
      'expires_in',
      'scope',
      'token_type',
    ]);
    for (const status of ['400', '401', '429']) {
      expect(Object.keys(named(token.responses[status].content['application/json'].schema).properties).sort()).toEqual(['error', 'error_description']);
    }
    expect(token.responses['429'].headers['Retry-After']).toMatchObject({ schema: { type: 'integer' } });
    // Documentation only: the endpoint still answers its own RFC 6749 errors, uncoerced.
    const numeric = await tokenRequest(h, { ...valid(), client_id: 42 });
    expect(numeric.status).toBe(400);
    expect(await numeric.json()).toEqual({ error: 'invalid_request', error_description: 'client_id must be a string' });
    const extra = await tokenRequest(h, { ...valid(), extra: 'ignored' });
    expect(extra.status).toBe(200);
  });

  it('keeps its signing key across restarts of the store', async () => {
    const before = (await (await fetch(`${h.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
    const token = await who.token();
    const again = await startHarness({ DATABASE_URL: h.config.databaseUrl });
    try {
      const after = (await (await fetch(`${again.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
      expect(after.keys.map((k) => k.kid)).toEqual(before.keys.map((k) => k.kid));
      const res = await fetch(`${again.url}/api/ip-addresses/192.0.2.1`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(404);
    } finally {
      await again.app.close();
      await again.services.close();
    }
  });
});

import { decodeJwt, decodeProtectedHeader, createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SENTRYPEER_AUDIENCE, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

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
  afterAll(() => h.close());

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
      scope: 'write:events read:events read:phone-numbers read:ip-addresses',
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
      azp: who.clientId,
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
    ['audience missing', { audience: undefined }],
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

  it('400 invalid_target for an audience not configured', async () => {
    const res = await tokenRequest(h, { ...valid(), audience: 'https://evil.example/api' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_target', error_description: expect.any(String) });
  });

  it('401 invalid_client for Basic credentials that cannot be read, audited as a failure', async () => {
    const res = await tokenRequest(h, { audience: AUDIENCE, grant_type: 'client_credentials' }, {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from('no-colon-here').toString('base64')}`,
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="tollwatch"');
    expect(await res.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const rows = await h.services.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'token.refused').execute();
    expect(rows.map((r) => JSON.parse(r.detail!).reason)).toContain('unreadable credentials');
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
      security: unknown[];
      paths: Record<string, Record<string, any>>;
    };
    const token = doc.paths['/oauth/token']!.post;
    // The document's global bearer/basic security does not apply here.
    expect(doc.security.length).toBeGreaterThan(0);
    expect(token.security).toEqual([]);
    expect(Object.keys(token.requestBody.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    for (const media of Object.values(token.requestBody.content) as Array<{ schema: { properties: object; required: string[] } }>) {
      expect(Object.keys(media.schema.properties).sort()).toEqual(['audience', 'client_id', 'client_secret', 'grant_type']);
      expect(media.schema.required.sort()).toEqual(['audience', 'grant_type']);
    }
    expect(Object.keys(token.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '429']));
    expect(Object.keys(token.responses['200'].content['application/json'].schema.properties).sort()).toEqual([
      'access_token',
      'expires_in',
      'scope',
      'token_type',
    ]);
    for (const status of ['400', '401', '429']) {
      expect(Object.keys(token.responses[status].content['application/json'].schema.properties).sort()).toEqual(['error', 'error_description']);
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

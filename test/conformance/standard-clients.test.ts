import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import createClient from 'openapi-fetch';
import * as oidc from 'openid-client';
import { ClientCredentials } from 'simple-oauth2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { freePort } from '../support/server-process.ts';

const hasPython = spawnSync('python3', ['--version']).status === 0;
const hasCurl = spawnSync('curl', ['--version']).status === 0;
/** Runs a program without blocking this process, which also serves the requests it makes. */
const run = promisify(execFile);

/**
 * Off-the-shelf clients nobody on the project wrote, each with its defaults, against a server
 * whose public address is its real one (as discovery needs): docs/api.md §2–§3 as the
 * standards they follow read them.
 */
describe('standard OAuth 2.0 and HTTP clients, out of the box', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    h = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: url, TOLLWATCH_AUDIENCE: `${url}/api` });
    who = await h.account();
  });
  afterAll(() => h?.close());

  const lookupWith = (token: string) => fetch(`${h.url}/api/ip-addresses/192.0.2.1`, { headers: { authorization: `Bearer ${token}` } });

  it('openid-client 6: RFC 8414 discovery, then the client-credentials grant with no parameters', async () => {
    // Plain HTTP on loopback needs the library's opt-in; nothing else is configured.
    const config = await oidc.discovery(new URL(h.url), who.clientId, who.clientSecret, undefined, {
      algorithm: 'oauth2',
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect((await lookupWith(tokens.access_token)).status).toBe(404);
    // Down-scoped through the library's own parameter.
    const narrow = await oidc.clientCredentialsGrant(config, { scope: 'read:phone-numbers' });
    expect(narrow.scope).toBe('read:phone-numbers');
    expect((await lookupWith(narrow.access_token)).status).toBe(403);
  });

  it('openapi-fetch: a client for the document, calling the operations it names with an openid-client token', async () => {
    const config = await oidc.discovery(new URL(h.url), who.clientId, who.clientSecret, undefined, { algorithm: 'oauth2', execute: [oidc.allowInsecureRequests] });
    const { access_token } = await oidc.clientCredentialsGrant(config);
    const document = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as { servers: Array<{ url: string }> };
    expect(document.servers[0]!.url).toBe(h.url);
    // Untyped here (TypeScript 7 has no compiler API for openapi-typescript to generate with):
    // the paths and bodies are the document's own.
    const api = createClient<any>({ baseUrl: document.servers[0]!.url, headers: { authorization: `Bearer ${access_token}` } });
    const event = { app_name: 'sentrypeer', app_version: '4.0.6', event_timestamp: '2026-11-22 06:25:32.918708020', event_uuid: crypto.randomUUID(), created_by_node_id: crypto.randomUUID(), collected_method: 'passive', transport_type: 'TCP', source_ip: '198.51.100.9', destination_ip: '192.0.2.2', called_number: '+441632960001', sip_method: 'INVITE', sip_user_agent: 'sipvicious', sip_message: 'INVITE sip:+441632960001@192.0.2.2 SIP/2.0\r\n\r\n' };
    const submitted = await api.POST('/api/events', { body: event });
    expect(submitted.response.status).toBe(201);
    const found = await api.GET('/api/phone-numbers/{phone_number}', { params: { path: { phone_number: '+441632960001' } } });
    expect(found.data).toMatchObject({ found: true, seen_count: 1 });
    const bad = await api.POST('/api/events', { body: { ...event, transport_type: 'SCTP' } });
    expect(bad.error).toMatchObject({ status: 422, error: 'validation_failed', errors: [{ field: 'transport_type' }] });
  });

  it('simple-oauth2 5: getToken({}) with its defaults (Basic credentials, form body)', async () => {
    const client = new ClientCredentials({ client: { id: who.clientId, secret: who.clientSecret }, auth: { tokenHost: h.url } });
    const token = await client.getToken({});
    expect((await lookupWith(token.token.access_token as string)).status).toBe(404);
  });

  it('jose 6 as a resource server checking RFC 9068 claims against the published JWKS', async () => {
    const token = await who.token();
    const metadata = (await (await fetch(`${h.url}/.well-known/oauth-authorization-server`)).json()) as { jwks_uri: string; issuer: string };
    const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(metadata.jwks_uri)), {
      issuer: metadata.issuer,
      audience: `${h.url}/api`,
      typ: 'at+jwt',
      requiredClaims: ['iss', 'exp', 'aud', 'sub', 'client_id', 'iat', 'jti'],
    });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload.client_id).toBe(who.clientId);
  });

  it.skipIf(!hasPython)("Python's urllib HTTPBasicAuthHandler answers the Basic challenge of /api", async () => {
    const script = `
import sys, urllib.request, urllib.error
url, cid, secret = sys.argv[1:4]
passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()
passwords.add_password(None, url, cid, secret)
opener = urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(passwords))
try:
    answer = opener.open(url + '/api/ip-addresses/192.0.2.1')
    print(answer.status, answer.read().decode())
except urllib.error.HTTPError as error:
    print(error.code, error.read().decode())
`;
    const { stdout, stderr } = await run('python3', ['-c', script, h.url, who.clientId, who.clientSecret], { encoding: 'utf8', timeout: 20_000 });
    expect(stderr).toBe('');
    const [status, ...body] = stdout.trim().split(' ');
    expect(status).toBe('404');
    expect(JSON.parse(body.join(' '))).toMatchObject({ ip_address: '192.0.2.1', found: false });
  });

  it.skipIf(!hasCurl)('curl --anyauth picks Basic from the challenge', async () => {
    const { stdout } = await run('curl', ['-s', '--anyauth', '-u', `${who.clientId}:${who.clientSecret}`, '-w', '\n%{http_code}', `${h.url}/api/ip-addresses/192.0.2.1`], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines.at(-1)).toBe('404');
    expect(JSON.parse(lines.slice(0, -1).join('\n'))).toMatchObject({ found: false });
  });
});

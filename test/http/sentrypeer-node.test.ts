import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/domain/accounts/secrets.ts';
import { SqlAccountsRepository } from '../../src/store/repositories/accounts-repository.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { recordedEvents, recordedRequests, type RecordedRequest } from '../support/recorded-requests.ts';

/** Sends a recorded request byte for byte, with our port in Host and a real token if asked. */
function replay(base: string, rec: RecordedRequest, bearer?: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const target = new URL(base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of rec.headers) {
      if (name.toLowerCase() === 'host') headers[name] = target.host;
      else if (name.toLowerCase() === 'authorization' && bearer) headers[name] = `Bearer ${bearer}`;
      else headers[name] = value;
    }
    const req = request({ host: target.hostname, port: target.port, method: rec.method, path: rec.path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(rec.body);
  });
}

describe('the public SentryPeer node, replayed as recorded', () => {
  let h: Harness;
  let accountId: string;

  beforeAll(async () => {
    h = await startHarness();
    const account = await h.services.accounts.createAccount({ name: 'honeypot owner', plan: 'contributor' });
    accountId = account.account_id;
    // The recorded node was configured with these literal credentials; give them to a client.
    // Straight into the store: the service makes its own ids and secrets, and the node's are fixed.
    await new SqlAccountsRepository(h.services.database.db).insertClient({
      client_id: 'test-client-id',
      account_id: account.account_id,
      name: 'sentrypeer node',
      permissions: ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses'],
      secret_hash: hashSecret('test-client-secret'),
      secret_version: 1,
      created_at: new Date().toISOString(),
    });
  });
  afterAll(() => h?.close());

  it('gets a token, posts events, and survives its own 401 retry path', async () => {
    const recorded = recordedRequests();
    expect(recorded.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /oauth/token',
      'POST /api/events',
      'POST /api/events',
      'POST /oauth/token',
      'POST /api/events',
    ]);
    const [tokenRequest, firstEvent, secondEvent, retryToken, retriedEvent] = recorded as [
      RecordedRequest,
      RecordedRequest,
      RecordedRequest,
      RecordedRequest,
      RecordedRequest,
    ];

    const token = await replay(h.url, tokenRequest);
    expect(token.status).toBe(200);
    const { access_token } = JSON.parse(token.body) as { access_token: string };
    expect(access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const first = await replay(h.url, firstEvent, access_token);
    expect(first.status).toBe(201);
    expect(JSON.parse(first.body)).toEqual({ message: expect.any(String) });

    // The stand-in answered 401 here; the node then fetched a new token and re-posted. Against
    // a token we revoked, we must answer 401 too, so that the node takes the same path.
    const revoked = await replay(h.url, secondEvent, `${access_token.slice(0, -4)}AAAA`);
    expect(revoked.status).toBe(401);
    expect(String(revoked.headers['www-authenticate'])).toContain('error="invalid_token"');

    const again = await replay(h.url, retryToken);
    expect(again.status).toBe(200);
    const fresh = (JSON.parse(again.body) as { access_token: string }).access_token;
    const retried = await replay(h.url, retriedEvent, fresh);
    expect(retried.status).toBe(201);

    // A re-post of an event already stored (the node retries after a timeout) is a 200, which
    // the node accepts, and stores nothing new.
    const replayed = await replay(h.url, retriedEvent, fresh);
    expect(replayed.status).toBe(200);
    const stored = await h.services.eventQuery.list(await h.services.accounts.getAccount(accountId), {});
    expect(stored.data).toHaveLength(2);
  });

  it('accepts every line of the node JSON log as it is', async () => {
    const token = JSON.parse((await replay(h.url, recordedRequests()[0]!)).body).access_token as string;
    const template = recordedRequests()[1]!;
    const lines = recordedEvents();
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      const res = await replay(h.url, { ...template, headers: template.headers.map(([k, v]) => [k, k.toLowerCase() === 'content-length' ? String(Buffer.byteLength(line)) : v]), body: line }, token);
      expect([200, 201], `${res.status} ${res.body}`).toContain(res.status);
    }
    const res = await fetch(`${h.url}/api/phone-numbers/%2B46812118532`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { found: boolean; matched_forms: string[]; seen_count: number };
    expect(answer.found).toBe(true);
    expect(answer.matched_forms).toContain('0046812118532');
  });
});

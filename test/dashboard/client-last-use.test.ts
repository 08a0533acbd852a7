import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientActivity } from '../../src/domain/accounts/client-activity.ts';
import { SqlClientActivityRepository } from '../../src/store/repositories/client-activity-repository.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';

/** Longer than any test here: every write of a use below is a flush the test asked for, or a close. */
const NEVER_BY_ITSELF_MS = 3_600_000;

/**
 * Settings → API clients shows each client's last token and last API call, time and address
 * (docs/dashboard.md, "Last used"), noted in memory and written by flushes, never per request.
 * Behind a proxy on this machine, so each request names its client's address.
 */
describe('Settings → API clients: last used', () => {
  let h: Harness;
  let owner: TestAccount;
  let browser: WebClient;

  /** The client's row on the page, its cells as text. */
  async function row(clientId: string): Promise<string> {
    const page = await browser.get('/settings/clients');
    return page.text.split('<tr>').find((r) => r.includes(clientId)) ?? '';
  }
  const stored = (clientId: string) =>
    h.services.database.db.selectFrom('clients').select(['last_used_at', 'last_token_address', 'last_call_at', 'last_call_address']).where('client_id', '=', clientId).executeTakeFirstOrThrow();
  /** A new client of the owner's account, with a token from the token endpoint. */
  async function newClient(permissions = ['read:events', 'read:phone-numbers']) {
    const { client_id: clientId, client_secret } = await h.services.accounts.createClient({ accountId: owner.account.account_id, name: 'node', permissions });
    const token = async () => {
      const res = await fetch(`${h.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret }) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    return { clientId, token };
  }
  /** An API call with `token` as from `address`, through the proxy the server trusts. */
  const callFrom = (token: string, path: string, address: string, base = h.url) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } });

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TRUST_PROXY: 'loopback' }, { clientUseFlushMs: NEVER_BY_ITSELF_MS });
    owner = await h.account();
    ({ browser } = await signedIn(h, owner.account.account_id));
  });
  afterAll(() => h?.close());

  it('shows the time and address of the last API call once flushed, and writes nothing per request before', async () => {
    const { clientId, token: tokenOf } = await newClient();
    const token = await tokenOf();
    const before = new Date().toISOString();
    // Calls through the full pipeline and through the lookups' direct lane (an admitted token).
    for (let i = 0; i < 20; i += 1) {
      const res = await callFrom(token, i % 2 === 0 ? '/api/events?limit=1' : '/api/phone-numbers/%2B46812118532', `198.51.100.${i + 1}`);
      expect(res.status).toBeLessThan(500);
    }
    const after = new Date().toISOString();
    // Twenty calls, and no store write for any of them.
    expect(await stored(clientId)).toMatchObject({ last_call_at: null, last_call_address: null });
    await h.services.clientActivity.flush();
    const written = await stored(clientId);
    expect(written.last_call_address).toBe('198.51.100.20');
    expect(written.last_call_at! >= before && written.last_call_at! <= after).toBe(true);
    // The page shows it with its address, beside the last token (asked for without a proxy header).
    const shown = await row(clientId);
    expect(shown).toContain(`<time datetime="${written.last_call_at}">${written.last_call_at!.slice(0, 16).replace('T', ' ')}</time> from <code>198.51.100.20</code>`);
    expect(shown).toContain(`<time datetime="${written.last_used_at}">`);
  });

  it('shows the last token’s time and address, kept with the time it goes with', async () => {
    const client = await newClient();
    expect((await row(client.clientId)).match(/<td[^>]*>never<\/td>/g)).toHaveLength(2);
    await client.token();
    await h.services.clientActivity.flush();
    const granted = await stored(client.clientId);
    expect(granted.last_used_at).not.toBeNull();
    // The token route tells the address it was asked from (here the test's own, no proxy header).
    expect(granted.last_token_address).toBe('127.0.0.1');
    // The address a grant was asked for from, as the token route tells it.
    const at = Date.parse(granted.last_used_at!) + 1000;
    h.services.clientActivity.tokenIssued(client.clientId, '203.0.113.50', at);
    await h.services.clientActivity.flush();
    expect(await row(client.clientId)).toContain(`<time datetime="${new Date(at).toISOString()}">${new Date(at).toISOString().slice(0, 16).replace('T', ' ')}</time> from <code>203.0.113.50</code>`);
  });

  it('keeps the latest use whichever instance flushes last', async () => {
    const caller = await newClient();
    const token = await caller.token();
    // Another instance over the same store, with uses of its own.
    const other = new ClientActivity(new SqlClientActivityRepository(h.services.database.db), NEVER_BY_ITSELF_MS, (err) => {
      throw err;
    });
    expect((await callFrom(token, '/api/events?limit=1', '198.51.100.77')).status).toBe(200);
    await h.services.clientActivity.flush();
    const ours = await stored(caller.clientId);
    // An earlier call, flushed later elsewhere, changes neither the time nor the address.
    other.called(caller.clientId, '192.0.2.1', Date.parse(ours.last_call_at!) - 60_000);
    other.tokenIssued(caller.clientId, '192.0.2.1', Date.parse(ours.last_used_at!) - 60_000);
    await other.flush();
    expect(await stored(caller.clientId)).toEqual(ours);
    // A later one, from there, replaces both.
    const later = Date.parse(ours.last_call_at!) + 60_000;
    other.called(caller.clientId, '192.0.2.2', later);
    await other.flush();
    expect(await stored(caller.clientId)).toEqual({ ...ours, last_call_at: new Date(later).toISOString(), last_call_address: '192.0.2.2' });
  });

  it('writes what it noted when the server closes', async () => {
    const caller = await newClient();
    const token = await caller.token();
    // A second server over the same store, which the test closes as an operator's restart would.
    const second = await startHarness({ DATABASE_URL: h.config.databaseUrl, TOLLWATCH_TRUST_PROXY: 'loopback' }, { clientUseFlushMs: NEVER_BY_ITSELF_MS });
    try {
      const res = await callFrom(token, '/api/events?limit=1', '198.51.100.99', second.url);
      expect(res.status).toBe(200);
      expect((await stored(caller.clientId)).last_call_at).toBeNull();
    } finally {
      await second.close();
    }
    expect((await stored(caller.clientId)).last_call_address).toBe('198.51.100.99');
  });
});

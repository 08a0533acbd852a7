import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';

/** The credentials a page shows once, read as a person reads them. */
function shownCredentials(text: string) {
  const clientId = /<code id="client-id">([^<]+)<\/code>/.exec(text)?.[1];
  const secret = /<code id="client-secret">([^<]+)<\/code>/.exec(text)?.[1];
  if (!clientId || !secret) throw new Error('no credentials on the page');
  return { clientId, secret };
}

async function tokenFor(h: Harness, clientId: string, secret: string) {
  return fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
  });
}

describe('Settings → API clients (docs/dashboard.md)', () => {
  let h: Harness;
  let owner: TestAccount;
  let browser: WebClient;

  beforeAll(async () => {
    // Uses are written when the test flushes them, never by the clock in between.
    h = await startHarness({}, { clientUseFlushMs: 3_600_000 });
    owner = await h.account();
    ({ browser } = await signedIn(h, owner.account.account_id));
  });
  afterAll(() => h?.close());

  it('creates a client whose secret is shown once and works at the token endpoint', async () => {
    const list = await browser.get('/settings/clients');
    expect(list.text).toContain('1 of 25 clients on the contributor plan.');
    const created = await browser.submit('/settings/clients', { name: 'node <b>2</b>', permissions: ['write:events', 'read:events'] });
    expect(created.status).toBe(200);
    expect(created.text).toContain('node &#60;b&#62;2&#60;/b&#62;');
    const { clientId, secret } = shownCredentials(created.text);
    // Post/redirect/get: the page the form led to, opened again (a reload), shows the secret no more
    // and made no second client.
    const reloaded = await browser.get('/settings/clients');
    expect(reloaded.text).not.toContain(secret);
    expect(reloaded.text.split('node &#60;b&#62;2&#60;/b&#62;')).toHaveLength(2);
    const token = await tokenFor(h, clientId, secret);
    expect(token.status).toBe(200);
    expect(((await token.json()) as { scope: string }).scope).toBe('write:events read:events');
    const after = await browser.get('/settings/clients');
    expect(after.text).toContain(clientId);
    // The token just issued is its last use, noted without holding up the token's answer and
    // shown once written (docs/dashboard.md, "Last used"): beside its creation, a second time.
    const row = async () => (await browser.get('/settings/clients')).text.split('<tr').find((r) => r.includes(clientId)) ?? '';
    expect((await row()).match(/<time /g)).toHaveLength(1);
    await h.services.clientActivity.flush();
    expect((await row()).match(/<time /g)).toHaveLength(2);
    expect(after.text).not.toContain(secret);
    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 20 });
    expect(audit.find((a) => a.action === 'client.created' && a.client_id === clientId)?.actor).toMatch(/^user:/);
  });

  it('holds a secret for the one page after the redirect sealed, and lets only that page show it', async () => {
    const posted = await browser.post('/settings/clients', { name: 'held', permissions: 'read:events' });
    expect(posted.status).toBe(303);
    expect(posted.location).toBe('/settings/clients');
    const rows = await h.services.database.db.selectFrom('user_sessions').select('held_view').where('held_view', 'is not', null).execute();
    expect(rows).toHaveLength(1);
    const { secret } = shownCredentials((await browser.get(posted.location!)).text);
    expect(rows[0]!.held_view).not.toContain(secret);
    // Taken by that view: nothing is held any more.
    expect(await h.services.database.db.selectFrom('user_sessions').select('held_view').where('held_view', 'is not', null).execute()).toEqual([]);
  });

  it('resets a secret: the old secret and its tokens stop at once, the new one works', async () => {
    const created = shownCredentials((await browser.submit('/settings/clients', { name: 'to reset', permissions: 'write:events' })).text);
    const oldToken = ((await (await tokenFor(h, created.clientId, created.secret)).json()) as { access_token: string }).access_token;
    const submit = (token: string) => fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent()) });
    expect((await submit(oldToken)).status).toBe(201);
    const confirm = await browser.get(`/settings/clients/${created.clientId}/reset-secret`);
    expect(confirm.text).toContain('Reset secret');
    const reset = shownCredentials((await browser.submit(`/settings/clients/${created.clientId}/reset-secret`)).text);
    // A reload of where the reset led resets nothing again: the new secret keeps working.
    expect((await browser.get('/settings/clients')).text).not.toContain(reset.secret);
    expect(reset.clientId).toBe(created.clientId);
    expect(reset.secret).not.toBe(created.secret);
    expect((await submit(oldToken)).status).toBe(401);
    expect((await tokenFor(h, created.clientId, created.secret)).status).toBe(401);
    expect((await tokenFor(h, reset.clientId, reset.secret)).status).toBe(200);
  });

  it('deletes a client after confirmation; its tokens stop', async () => {
    const created = shownCredentials((await browser.submit('/settings/clients', { name: 'to delete', permissions: 'read:events' })).text);
    const token = ((await (await tokenFor(h, created.clientId, created.secret)).json()) as { access_token: string }).access_token;
    await browser.get(`/settings/clients/${created.clientId}/delete`);
    const deleted = await browser.post(`/settings/clients/${created.clientId}/delete`);
    expect(deleted.status).toBe(303);
    expect((await browser.get('/settings/clients')).text).not.toContain(created.clientId);
    expect((await fetch(`${h.url}/api/events`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  });

  it('shows the plan limit before it is hit, and refuses a client beyond it', async () => {
    const tester = await h.account({ plan: 'tester' });
    const { browser: b } = await signedIn(h, tester.account.account_id);
    const page = await b.get('/settings/clients');
    expect(page.text).toContain('1 of 1 clients on the tester plan. The limit is reached');
    expect(page.text).not.toContain('New client');
    const refused = await b.post('/settings/clients', { name: 'second', permissions: 'read:events' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('at most 1 clients');
  });

  it("never lets another account act on this account's client, answering as for a missing one", async () => {
    const other = await h.account();
    const { browser: intruder } = await signedIn(h, other.account.account_id);
    await intruder.get('/settings/clients');
    expect((await intruder.get(`/settings/clients/${owner.clientId}/reset-secret`)).status).toBe(404);
    expect((await intruder.post(`/settings/clients/${owner.clientId}/reset-secret`)).status).toBe(404);
    expect((await intruder.post(`/settings/clients/${owner.clientId}/delete`)).status).toBe(404);
    expect((await intruder.get('/settings/clients')).text).not.toContain(owner.clientId);
    expect((await postEvent(owner, sampleEvent())).status).toBe(201);
  });

  it('shows the account: plan, usage, users and what a node needs', async () => {
    await h.services.ingestUrls.create({ accountId: owner.account.account_id, name: 'stock <node>' });
    const page = await browser.get('/settings/account');
    expect(page.text).toContain('stock &#60;node&#62;');
    expect(page.text).not.toContain('twi_');
    expect(page.status).toBe(200);
    expect(page.text).toContain('http://tollwatch.test/oauth/token');
    expect(page.text).toContain('http://tollwatch.test/api');
    expect(page.text).toMatch(/Event submissions<\/th><td>100,000 an hour<\/td><td><meter min="0" max="100000" value="\d+">/);
    expect(page.text).toContain('@example.test');
    expect(page.text).toContain('sentrypeer -w http://tollwatch.test/api/events');
  });

  it('gives an account that only looks up what its programs need, and no node settings', async () => {
    const lookups = await h.account({ plan: 'tester' });
    const { browser: theirs } = await signedIn(h, lookups.account.account_id);
    const page = await theirs.get('/settings/account');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<code id="token-url">http://tollwatch.test/oauth/token</code>');
    expect(page.text).toContain('<code id="audience">http://tollwatch.test/api</code>');
    expect(page.text).toContain('This plan does not submit events');
    expect(page.text).not.toContain('sentrypeer -w');
  });
});

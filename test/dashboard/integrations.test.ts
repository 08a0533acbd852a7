import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { signedIn, type WebClient } from './web-client.ts';

/** The id of the integration a page links to by name. */
function linkedId(text: string, name: string): string {
  const id = new RegExp(`href="/settings/integrations/([0-9a-f-]{36})">${name}<`).exec(text)?.[1];
  if (!id) throw new Error(`no integration named ${name} on the page`);
  return id;
}

describe('Settings → Integrations (docs/dashboard.md)', () => {
  let h: Harness;
  let receiver: AlertReceiver;
  let owner: TestAccount;
  let browser: WebClient;

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    // The local receiver is on 127.0.0.1: the operator's setting that lets tests name it.
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    owner = await h.account();
    ({ browser } = await signedIn(h, owner.account.account_id));
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('creates a webhook whose secret is shown once and signs the test alert the owner sends', async () => {
    expect((await browser.get('/settings/integrations')).text).toContain('0 of 20 integrations.');
    const created = await browser.submit('/settings/integrations', { kind: 'webhook', name: 'desk <1>', url: `${receiver.url}/desk`, alert_types: ['lookup.matched', 'node.silent'] });
    expect(created.status).toBe(200);
    const secret = /<code id="webhook-secret">(whsec_[^<]+)<\/code>/.exec(created.text)?.[1];
    expect(secret).toBeDefined();
    const list = await browser.get('/settings/integrations');
    expect(list.text).toContain('desk &#60;1&#62;');
    expect(list.text).toContain('lookup.matched node.silent');
    expect(list.text).not.toContain(secret!);
    const id = linkedId(list.text, 'desk &#60;1&#62;');

    const detail = await browser.get(`/settings/integrations/${id}`);
    expect(detail.text).not.toContain(secret!);
    expect(detail.text).toContain('No deliveries yet.');
    const tested = await browser.submit(`/settings/integrations/${id}/test`);
    expect(tested.status).toBe(200);
    const alertId = /A test alert \(<code>(msg_[^<]+)<\/code>\)/.exec(tested.text)?.[1];
    const [delivery] = await receiver.waitFor(1, '/desk');
    const payload = new Webhook(secret!).verify(delivery!.body, delivery!.headers as Record<string, string>) as { type: string };
    expect(payload.type).toBe('integration.test');
    expect(delivery!.headers['webhook-id']).toBe(alertId);
    // The attempt shows in the delivery log once the worker has recorded it.
    await expect.poll(async () => (await browser.get(`/settings/integrations/${id}`)).text).toContain('outcome-delivered');

    // Sent again from the log: the same alert, as a new delivery, and back to the page.
    const page = await browser.get(`/settings/integrations/${id}`);
    const again = /action="(\/settings\/integrations\/[0-9a-f-]{36}\/deliveries\/[0-9a-f-]{36}\/retry)"/.exec(page.text)?.[1];
    expect(again).toBeDefined();
    const resent = await browser.post(again!);
    expect(resent.status).toBe(303);
    expect(resent.location).toBe(`/settings/integrations/${id}`);
    const [, second] = await receiver.waitFor(2, '/desk');
    expect(second!.headers['webhook-id']).toBe(alertId);

    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 20 });
    expect(audit.find((a) => a.action === 'integration.created')?.actor).toMatch(/^user:/);
  });

  it('shows the reasons for a refused integration, and stores nothing', async () => {
    const before = (await h.services.integrations.list(owner.account.account_id)).length;
    const refused = await browser.post('/settings/integrations', { kind: 'slack', name: 'bad', url: 'not a url', min_score: '35' });
    expect(refused.status).toBe(422);
    // Each reason in words, at its field, which says it is invalid and where its reason is.
    expect(refused.text).toContain('<p class="field-error" id="url-error">The URL must be an absolute URL.</p>');
    expect(refused.text).toMatch(/<input id="url" [^>]*value="not a url" aria-invalid="true" aria-describedby="url-error">/);
    expect(refused.text).toContain('The alerts must be a non-empty list');
    // What was typed comes back: the kind chosen, the name, the URL, the score.
    expect(refused.text).toContain('<option value="slack" selected>');
    expect(refused.text).toMatch(/<input id="name" [^>]*value="bad"/);
    expect(refused.text).toMatch(/<input id="min_score" [^>]*value="35"/);
    expect(refused.text).not.toMatch(/<input id="name" [^>]*aria-invalid/);
    const noMail = await browser.post('/settings/integrations', { kind: 'email', email: 'desk@example.com', alert_types: 'node.silent' });
    expect(noMail.status).toBe(422);
    expect(noMail.text).toContain('no SMTP server is configured');
    const noKind = await browser.post('/settings/integrations', { kind: 'pager', url: `${receiver.url}/x`, alert_types: 'node.silent' });
    expect(noKind.status).toBe(422);
    expect(noKind.text).toContain('The kind must be one of webhook, slack, email.');
    expect(await h.services.integrations.list(owner.account.account_id)).toHaveLength(before);
  });

  it('changes the alerts an integration receives, and deletes it after confirmation', async () => {
    await browser.post('/settings/integrations', { kind: 'slack', name: 'chat', url: `${receiver.url}/services/T0/B0/secretpart`, alert_types: 'number.first_seen' });
    const list = await browser.get('/settings/integrations');
    // A Slack URL is a credential: the page shows where it points, not its path.
    expect(list.text).not.toContain('secretpart');
    const id = linkedId(list.text, 'chat');
    await browser.get(`/settings/integrations/${id}`);
    const saved = await browser.post(`/settings/integrations/${id}`, { name: 'chat room', alert_types: ['number.first_seen', 'lookup.matched'] });
    expect(saved.status).toBe(303);
    expect((await h.services.integrations.get(owner.account.account_id, id)).alert_types).toEqual(['lookup.matched', 'number.first_seen']);
    const emptied = await browser.post(`/settings/integrations/${id}`, { name: 'chat room' });
    expect(emptied.status).toBe(422);
    expect((await h.services.integrations.get(owner.account.account_id, id)).alert_types).toEqual(['lookup.matched', 'number.first_seen']);

    expect((await browser.get(`/settings/integrations/${id}/delete`)).text).toContain('Delete integration');
    expect((await browser.post(`/settings/integrations/${id}/delete`)).status).toBe(303);
    expect((await browser.get('/settings/integrations')).text).not.toContain('chat room');
    expect((await browser.get(`/settings/integrations/${id}`)).status).toBe(404);
  });

  it('sets a least score, rotates a webhook’s secret (shown once), and disables and enables it again', async () => {
    await browser.post('/settings/integrations', { kind: 'webhook', name: 'scored', url: `${receiver.url}/scored`, alert_types: 'lookup.matched', min_score: '35' });
    const id = linkedId((await browser.get('/settings/integrations')).text, 'scored');
    expect((await h.services.integrations.get(owner.account.account_id, id)).min_score).toBe(35);
    const refused = await browser.post(`/settings/integrations/${id}`, { name: 'scored', alert_types: 'lookup.matched', min_score: '101' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('The least score must be an integer from 0 to 100.');

    const rotated = await browser.submit(`/settings/integrations/${id}/secret`);
    expect(rotated.status).toBe(200);
    const secret = /<code id="webhook-secret">(whsec_[^<]+)<\/code>/.exec(rotated.text)?.[1];
    expect(secret).toBeDefined();
    expect((await browser.get(`/settings/integrations/${id}`)).text).not.toContain(secret!);

    expect((await browser.post(`/settings/integrations/${id}/disable`)).status).toBe(303);
    const off = await browser.get(`/settings/integrations/${id}`);
    expect(off.text).toContain('disabled by its owner');
    expect(off.text).toContain('Enable again');
    expect((await browser.post(`/settings/integrations/${id}/enable`)).status).toBe(303);
    expect((await h.services.integrations.get(owner.account.account_id, id)).status).toBe('active');
    expect((await browser.post(`/settings/integrations/${id}/delete`)).status).toBe(303);
  });

  it('lets members read but not change, and answers another account’s integration as missing', async () => {
    const [mine] = await h.services.integrations.list(owner.account.account_id);
    const { browser: member } = await signedIn(h, owner.account.account_id, 'member');
    const page = await member.get('/settings/integrations');
    expect(page.text).toContain('Only the account’s owners can change its integrations.');
    expect(page.text).not.toContain('New integration');
    expect((await member.get(`/settings/integrations/${mine!.id}`)).status).toBe(200);
    expect((await member.post('/settings/integrations', { kind: 'webhook', url: `${receiver.url}/m`, alert_types: 'node.silent' })).status).toBe(403);
    expect((await member.post(`/settings/integrations/${mine!.id}/test`)).status).toBe(403);

    const other = await h.account();
    const { browser: stranger } = await signedIn(h, other.account.account_id);
    expect((await stranger.get(`/settings/integrations/${mine!.id}`)).status).toBe(404);
    await stranger.get('/settings/integrations');
    expect((await stranger.post(`/settings/integrations/${mine!.id}/delete`)).status).toBe(404);
    expect(await h.services.integrations.list(owner.account.account_id)).toHaveLength(1);
  });

  it('refuses a change without the page’s CSRF token', async () => {
    await browser.get('/settings/integrations');
    expect((await browser.post('/settings/integrations', { kind: 'webhook', url: `${receiver.url}/c`, alert_types: 'node.silent' }, null)).status).toBe(403);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAST_ALERTS } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { signedIn, type WebClient } from './web-client.ts';

/** The id of the integration a page links to by name. */
function linkedId(text: string, name: string): string {
  const id = new RegExp(`href="/settings/integrations/([0-9a-f-]{36})">${name}<`).exec(text)?.[1];
  if (!id) throw new Error(`no integration named ${name} on the page`);
  return id;
}

/**
 * Changing an integration from its page (docs/dashboard.md, docs/api.md §12 "Changing"), with
 * private targets refused as in production: the webhooks here name public addresses and are
 * sent nothing; the mail goes to a real local SMTP server.
 */
describe('Settings → Integrations: changing one', () => {
  let catcher: MailCatcher;
  let h: Harness;
  let owner: TestAccount;
  let browser: WebClient;

  /** The mails sent to `address`, read as they arrived. */
  const mailsTo = (address: string) => catcher.mails.filter((m) => m.to.includes(address)).map((m) => m.raw.replace(/=\r?\n/g, ''));
  const linkIn = (raw: string) => /http:\/\/tollwatch\.test(\/integrations\/confirm\/[A-Za-z0-9_-]{43})/.exec(raw)?.[1];
  /** Follows the newest confirmation link mailed to `address`, as its reader would. */
  async function confirm(address: string) {
    const mail = await eventually(`a confirmation mail to ${address}`, () => mailsTo(address).filter(linkIn).at(-1), (m) => m !== undefined);
    const res = await fetch(`${h.url}${linkIn(mail!)}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    expect(res.status).toBe(200);
  }
  const auditOf = async (action: string) => (await h.services.audit.list({ accountId: owner.account.account_id, limit: 200 })).filter((a) => a.action === action);

  beforeAll(async () => {
    catcher = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SMTP_URL: catcher.url }, { alerts: FAST_ALERTS });
    owner = await h.account();
    ({ browser } = await signedIn(h, owner.account.account_id));
  });
  // Each test starts from the list, as a person does, with the page's CSRF token.
  beforeEach(() => browser.get('/settings/integrations'));
  afterAll(async () => {
    await h?.close();
    await catcher?.close();
  });

  it('changes a webhook’s name, URL, alerts and least score in one round trip, audited without the URL', async () => {
    await browser.submit('/settings/integrations', { kind: 'webhook', name: 'desk', url: 'https://93.184.215.14/hook', alert_types: 'node.silent', min_score: '20' });
    const id = linkedId((await browser.get('/settings/integrations')).text, 'desk');
    const page = await browser.get(`/settings/integrations/${id}`);
    // The form starts from what is held.
    expect(page.text).toMatch(/<input id="url" [^>]*value="https:\/\/93\.184\.215\.14\/hook"/);
    expect(page.text).toMatch(/<input id="min_score" [^>]*value="20"/);

    const saved = await browser.post(`/settings/integrations/${id}`, { name: 'fraud desk', url: 'https://93.184.215.15/tollwatch?k=s3cret', alert_types: ['lookup.matched', 'node.silent'], min_score: '45' });
    expect(saved.status).toBe(303);
    expect(saved.location).toBe(`/settings/integrations/${id}`);
    const shown = await browser.get(saved.location!);
    expect(shown.text).toContain('<h1>fraud desk</h1>');
    expect(shown.text).toMatch(/<input id="url" [^>]*value="https:\/\/93\.184\.215\.15\/tollwatch\?k=s3cret"/);
    expect(shown.text).toContain('lookup.matched node.silent, at a score of 45 or more');
    expect(await h.services.integrations.get(owner.account.account_id, id)).toMatchObject({
      name: 'fraud desk',
      url: 'https://93.184.215.15/tollwatch?k=s3cret',
      alert_types: ['lookup.matched', 'node.silent'],
      min_score: 45,
      status: 'active',
    });

    // Opened again (a reload of where the redirect led), the page changes nothing more.
    await browser.get(saved.location!);
    const updates = await auditOf('integration.updated');
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ actor: expect.stringMatching(/^user:/), detail: { integration_id: id, name: 'fraud desk', min_score: 45, target_changed: true } });
    expect(JSON.stringify(updates[0])).not.toContain('s3cret');
  });

  it('refuses a URL the SSRF guard refuses, showing what was typed with the reason at its field, and keeps the one held', async () => {
    await browser.submit('/settings/integrations', { kind: 'webhook', name: 'guarded', url: 'https://93.184.215.14/guarded', alert_types: 'node.silent' });
    const id = linkedId((await browser.get('/settings/integrations')).text, 'guarded');
    await browser.get(`/settings/integrations/${id}`);
    const metadata = 'https://169.254.169.254/latest/meta-data/';
    const refused = await browser.post(`/settings/integrations/${id}`, { name: 'renamed too', url: metadata, alert_types: 'node.silent', min_score: '30' });
    expect(refused.status).toBe(422);
    expect(refused.text).toMatch(/<input id="url" [^>]*value="https:\/\/169\.254\.169\.254\/latest\/meta-data\/" aria-invalid="true" aria-describedby="url-error">/);
    expect(refused.text).toContain('<p class="field-error" id="url-error">The URL must not resolve to a loopback, private, link-local');
    // Everything typed comes back, the fields that were fine without a reason of their own.
    expect(refused.text).toMatch(/<input id="name" [^>]*value="renamed too"/);
    expect(refused.text).not.toMatch(/<input id="name" [^>]*aria-invalid/);
    expect(refused.text).toMatch(/<input id="min_score" [^>]*value="30"/);
    const plain = await browser.post(`/settings/integrations/${id}`, { name: 'guarded', url: 'http://93.184.215.14/guarded', alert_types: 'node.silent' });
    expect(plain.status).toBe(422);
    expect(plain.text).toContain('<p class="field-error" id="url-error">The URL must be an https: URL.</p>');
    // Nothing of a refused change is kept.
    expect(await h.services.integrations.get(owner.account.account_id, id)).toMatchObject({ name: 'guarded', url: 'https://93.184.215.14/guarded', min_score: 20 });
  });

  it('keeps a Slack URL it never shows when its field is left empty, and takes a new one', async () => {
    await browser.submit('/settings/integrations', { kind: 'slack', name: 'chat', url: 'https://93.184.215.14/services/T0/B0/secretpart', alert_types: 'node.silent' });
    const id = linkedId((await browser.get('/settings/integrations')).text, 'chat');
    const page = await browser.get(`/settings/integrations/${id}`);
    expect(page.text).not.toContain('secretpart');
    expect((await browser.post(`/settings/integrations/${id}`, { name: 'chat room', url: '', alert_types: 'node.silent' })).status).toBe(303);
    const stored = () => h.services.database.db.selectFrom('integrations').select(['name', 'target']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(await stored()).toEqual({ name: 'chat room', target: 'https://93.184.215.14/services/T0/B0/secretpart' });
    await browser.get(`/settings/integrations/${id}`);
    expect((await browser.post(`/settings/integrations/${id}`, { name: 'chat room', url: 'https://93.184.215.15/services/T1/B1/other', alert_types: 'node.silent' })).status).toBe(303);
    expect((await stored()).target).toBe('https://93.184.215.15/services/T1/B1/other');
  });

  it('confirms a changed email address again: nothing reaches the new or the old address until then, and what waited goes to the new one after', async () => {
    const created = await browser.submit('/settings/integrations', { kind: 'email', name: 'noc', email: 'noc@example.com', alert_types: ['number.first_seen'], min_score: '0' });
    expect(created.text).toContain('A confirmation mail went to');
    const id = linkedId((await browser.get('/settings/integrations')).text, 'noc');
    await confirm('noc@example.com');
    // A second address of the account, confirmed: it witnesses that alerts are going out.
    await browser.submit('/settings/integrations', { kind: 'email', name: 'witness', email: 'witness@example.com', alert_types: ['number.first_seen'], min_score: '0' });
    const witness = linkedId((await browser.get('/settings/integrations')).text, 'witness');
    await confirm('witness@example.com');

    // A test alert reaches the confirmed address, and is in its log to be sent again later.
    await browser.get(`/settings/integrations/${id}`);
    await browser.submit(`/settings/integrations/${id}/test`);
    await eventually('the test alert at noc@', () => mailsTo('noc@example.com').filter((m) => m.includes('integration.test')).length, (n) => n === 1);
    const logged = await eventually('a delivered attempt in the log', async () => (await browser.get(`/settings/integrations/${id}`)).text, (t) => t.includes('outcome-delivered'));
    const again = /action="(\/settings\/integrations\/[0-9a-f-]{36}\/deliveries\/[0-9a-f-]{36}\/retry)"/.exec(logged)?.[1];
    expect(again).toBeDefined();

    const mailsBefore = catcher.mails.length;
    const changed = await browser.post(`/settings/integrations/${id}`, { name: 'noc', email: 'desk@example.net', alert_types: 'number.first_seen', min_score: '0' });
    expect(changed.status).toBe(303);
    const after = await browser.get(changed.location!);
    expect(after.text).toContain('A confirmation mail went to <strong>desk@example.net</strong>');
    expect(after.text).toContain('awaiting confirmation');
    expect(after.text).toMatch(/<input id="email" [^>]*value="desk@example.net"/);
    // One mail, with a link, to the new address; a reload shows the notice no more and sends nothing.
    await eventually('the confirmation mail to desk@', () => mailsTo('desk@example.net').length, (n) => n === 1);
    expect(linkIn(mailsTo('desk@example.net')[0]!)).toBeDefined();
    const reloaded = await browser.get(changed.location!);
    expect(reloaded.text).not.toContain('A confirmation mail went to');
    expect(catcher.mails.length).toBe(mailsBefore + 1);
    expect(await auditOf('integration.updated')).toContainEqual(expect.objectContaining({ detail: { integration_id: id, name: 'noc', alert_types: ['number.first_seen'], min_score: 0, target_changed: true } }));

    // Unconfirmed: a test is refused; an alert sent again from the log waits, unattempted.
    expect((await browser.post(`/settings/integrations/${id}/test`)).status).toBe(422);
    expect((await browser.post(again!)).status).toBe(303);
    const held = () => h.services.database.db.selectFrom('alert_deliveries').select(['attempts', 'claimed_until', 'status']).where('integration_id', '=', id).where('status', '=', 'pending').execute();
    expect(await held()).toHaveLength(1);
    // A new number alerts the witness; once it has its mail, the fan-out and a claim of every due
    // delivery (the waiting one was due first) are behind us: nothing was queued for the changed
    // integration, and its waiting delivery was not taken.
    expect((await postEvent(owner, sampleEvent({ called_number: '+15551239901' }))).status).toBe(201);
    await eventually('number.first_seen at the witness', () => mailsTo('witness@example.com').filter((m) => m.includes('+15551239901')).length, (n) => n === 1);
    expect(await held()).toEqual([{ attempts: 0, claimed_until: null, status: 'pending' }]);
    const deliveries = await h.services.database.db.selectFrom('alert_deliveries').select('id').where('integration_id', '=', id).execute();
    expect(deliveries).toHaveLength(2);
    expect(mailsTo('desk@example.net')).toHaveLength(1);
    expect(mailsTo('noc@example.com').filter((m) => !m.includes('integration.test') && !linkIn(m))).toEqual([]);
    expect(mailsTo('noc@example.com').filter((m) => m.includes('integration.test'))).toHaveLength(1);

    // Confirmed, the integration is active and what waited goes to the new address.
    await confirm('desk@example.net');
    expect((await h.services.integrations.get(owner.account.account_id, id)).status).toBe('active');
    await eventually('the held test alert at desk@', () => mailsTo('desk@example.net').filter((m) => m.includes('integration.test')).length, (n) => n === 1);
    expect(mailsTo('noc@example.com').filter((m) => m.includes('integration.test'))).toHaveLength(1);
    expect((await h.services.integrations.get(owner.account.account_id, witness)).status).toBe('active');
  });

  it('refuses an unusable address with the typed value at its field, and mails nothing', async () => {
    const [noc] = (await h.services.integrations.list(owner.account.account_id)).filter((i) => i.name === 'noc');
    await browser.get(`/settings/integrations/${noc!.id}`);
    const mailsBefore = catcher.mails.length;
    const refused = await browser.post(`/settings/integrations/${noc!.id}`, { name: 'noc', email: 'not an address', alert_types: 'number.first_seen', min_score: '0' });
    expect(refused.status).toBe(422);
    expect(refused.text).toMatch(/<input id="email" [^>]*value="not an address" aria-invalid="true" aria-describedby="email-error">/);
    expect(refused.text).toContain('<p class="field-error" id="email-error">The email address must be an email address');
    expect((await h.services.integrations.get(owner.account.account_id, noc!.id)).email).toBe('desk@example.net');
    expect(catcher.mails.length).toBe(mailsBefore);
  });
});

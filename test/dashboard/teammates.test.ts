import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { eventually } from '../support/eventually.ts';
import { signedIn, WebClient, type WebClient as Client } from './web-client.ts';

const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

/**
 * Owners manage their account's users themselves: invite a teammate as owner
 * or member (the link mailed, or shown once where no mail is sent), change a role, remove one;
 * the account always keeps an owner, and nobody reaches another account's users.
 */
describe('teammates (docs/dashboard.md, "People")', () => {
  let h: Harness;
  let mail: MailCatcher;
  let owner: TestAccount;
  let page: Client;

  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' });
    owner = await h.account();
    ({ browser: page } = await signedIn(h, owner.account.account_id));
  });
  afterAll(async () => {
    await h.close();
    await mail.close();
  });

  it('invites a member whose mailed link signs them in with that role', async () => {
    await page.get('/settings/account');
    const invited = await page.submit('/settings/account/users', { email: 'Mate@Example.test', role: 'member' });
    expect(invited.text).toContain('An invitation is mailed to <strong>mate@example.test</strong>');
    const [sent] = await eventually('the invitation', async () => mail.mails.filter((m) => m.to.includes('mate@example.test')), (m) => m.length === 1);
    const link = /http:\/\/tollwatch\.test(\/invitations\/twu_[\w-]{43})/.exec(bodyOf(sent!.raw))![1]!;
    const mate = new WebClient(h.url);
    await mate.get(link);
    expect((await mate.post(link, { password: 'a teammate password', confirm: 'a teammate password' })).status).toBe(303);
    expect((await mate.signIn('mate@example.test', 'a teammate password')).status).toBe(303);
    // A member reads the account, and has no invitation form or controls.
    const seen = await mate.get('/settings/account');
    expect(seen.text).not.toContain('Invite a teammate');
    expect((await mate.post('/settings/account/users', { email: 'x@example.test', role: 'owner' })).status).toBe(403);
  });

  it('changes a role and removes a teammate, who is signed out at once', async () => {
    const { browser: mate, user } = await signedIn(h, owner.account.account_id, 'member');
    await page.get('/settings/account');
    expect((await page.post(`/settings/account/users/${user.user_id}`, { role: 'owner' })).status).toBe(303);
    expect((await h.services.users.getUser(user.user_id)).role).toBe('owner');
    await page.get('/settings/account');
    expect((await page.post(`/settings/account/users/${user.user_id}`, { action: 'remove' })).status).toBe(303);
    expect((await h.services.users.getUser(user.user_id)).disabled).toBe(true);
    expect((await mate.get('/settings/account')).status).toBe(303);
    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 50 });
    expect(audit.filter((a) => a.action === 'user.role_changed' || a.action === 'user.disabled').map((a) => a.actor)).toEqual([expect.stringMatching(/^user:/), expect.stringMatching(/^user:/)]);
  });

  it('never acts on the owner’s own row, refuses a bad invitation as typed, and never reaches another account’s users', async () => {
    const lone = await h.account();
    const { browser: solo, user: soloUser } = await signedIn(h, lone.account.account_id);
    const { user: other } = await signedIn(h, lone.account.account_id, 'member');
    await solo.get('/settings/account');
    // An owner never acts on their own row (so an account always keeps the owner acting).
    expect((await solo.post(`/settings/account/users/${soloUser.user_id}`, { action: 'remove' })).status).toBe(404);
    expect((await solo.post(`/settings/account/users/${soloUser.user_id}`, { role: 'member' })).status).toBe(404);
    expect((await h.services.users.getUser(soloUser.user_id)).role).toBe('owner');
    const bad = await solo.post('/settings/account/users', { email: 'not an email', role: 'member' });
    expect(bad.status).toBe(422);
    expect(bad.text).toMatch(/<input id="invite-email" [^>]*value="not an email" aria-invalid="true"/);
    const operatorRole = await solo.post('/settings/account/users', { email: 'op@example.test', role: 'operator' });
    expect(operatorRole.status).toBe(422);
    // Another account's owner: the user is not theirs.
    await page.get('/settings/account');
    expect((await page.post(`/settings/account/users/${other.user_id}`, { action: 'remove' })).status).toBe(404);
    expect((await h.services.users.getUser(other.user_id)).disabled).toBe(false);
  });

  it('shows the link once where the server sends no mail', async () => {
    const quiet = await startHarness();
    try {
      const account = await quiet.account();
      const { browser } = await signedIn(quiet, account.account.account_id);
      await browser.get('/settings/account');
      const invited = await browser.submit('/settings/account/users', { email: 'nomail@example.test', role: 'member' });
      const link = /<code id="invitation-link">(http[^<]+)<\/code>/.exec(invited.text)?.[1];
      expect(link).toMatch(/\/invitations\/twu_/);
      expect((await browser.get('/settings/account')).text).not.toContain(link!);
    } finally {
      await quiet.close();
    }
  });
});

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
    await h?.close();
    await mail?.close();
  });

  it('invites a member whose mailed link signs them in with that role', async () => {
    await page.get('/settings/account');
    const invited = await page.submit('/settings/account/users', { email: 'Mate@Example.test', role: 'member' });
    expect(invited.text).toContain('An invitation is mailed to <strong>mate@example.test</strong>');
    const [sent] = await eventually('the invitation', async () => mail.mails.filter((m) => m.to.includes('mate@example.test')), (m) => m.length === 1);
    const link = /http:\/\/tollwatch\.test(\/invitations\/twu_[\w-]{43})/.exec(bodyOf(sent!.raw))![1]!;
    // Friendly: the account by name, the time as people write it, never a raw ISO instant.
    expect(bodyOf(sent!.raw)).toContain(`invited you to their Tollwatch account "${owner.account.name}" as member.`);
    expect(bodyOf(sent!.raw)).toMatch(/open this link before \d{1,2} [A-Z][a-z]+ \d{4}, \d{2}:\d{2} UTC \(it works once\)/);
    expect(bodyOf(sent!.raw)).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
    const mate = new WebClient(h.url);
    await mate.get(link);
    expect((await mate.post(link, { password: 'a teammate password', confirm: 'a teammate password' })).status).toBe(303);
    expect((await mate.signIn('mate@example.test', 'a teammate password')).status).toBe(303);
    // A member reads the account, and has no invitation form or controls.
    const seen = await mate.get('/settings/account');
    expect(seen.text).not.toContain('Invite a teammate');
    expect((await mate.post('/settings/account/users', { email: 'x@example.test', role: 'owner' })).status).toBe(403);
  });

  it('changes a role and removes a teammate after asking, who is signed out at once', async () => {
    const { browser: mate, user } = await signedIn(h, owner.account.account_id, 'member');
    await page.get('/settings/account');
    const promoted = await page.submit(`/settings/account/users/${user.user_id}`, { role: 'owner' });
    expect((await h.services.users.getUser(user.user_id)).role).toBe('owner');
    expect(promoted.text).toContain(`<strong>${user.email}</strong> is now owner.`);
    // The row offers a link to a page that asks first; that page changes nothing by being read.
    expect(promoted.text).toContain(`<a href="/settings/account/users/${user.user_id}/remove" aria-label="Remove ${user.email}…">Remove…</a>`);
    const asked = await page.get(`/settings/account/users/${user.user_id}/remove`);
    expect(asked.status).toBe(200);
    expect(asked.text).toContain(`<button type="submit" class="danger">Remove ${user.email}</button>`);
    expect((await h.services.users.getUser(user.user_id)).disabled).toBe(false);
    const removed = await page.submit(`/settings/account/users/${user.user_id}`, { action: 'remove' });
    expect(removed.text).toContain(`<p class="notice" role="status" tabindex="-1" autofocus><strong>${user.email}</strong> is removed`);
    expect((await h.services.users.getUser(user.user_id)).disabled).toBe(true);
    // Removed, the teammate has nothing left to confirm.
    expect((await page.get(`/settings/account/users/${user.user_id}/remove`)).status).toBe(404);
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
    expect((await solo.get(`/settings/account/users/${soloUser.user_id}/remove`)).status).toBe(404);
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
    expect((await page.get(`/settings/account/users/${other.user_id}/remove`)).status).toBe(404);
    expect((await h.services.users.getUser(other.user_id)).disabled).toBe(false);
  });

  it("answers and lists an address another account's user (or an operator) has as any other, mails that user, and gives nothing away", async () => {
    const elsewhere = await h.account();
    const { email: theirs, user: them } = await signedIn(h, elsewhere.account.account_id, 'member');
    const { email: operator } = await signedIn(h, null, 'operator');
    // Each invitation from an account of its own, so the pages differ only by the address.
    const invitedBy = async (email: string) => {
      const account = await h.account();
      const { browser, email: ownerEmail } = await signedIn(h, account.account.account_id);
      await browser.get('/settings/account');
      const posted = await browser.post('/settings/account/users', { email, role: 'member' });
      expect(posted.status, email).toBe(303);
      const normal = (text: string) =>
        text
          .replaceAll(email, 'ADDRESS')
          .replaceAll(ownerEmail, 'OWNER')
          .replaceAll(account.account.account_id, 'ACCOUNT')
          .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UUID')
          .replace(/name="_csrf" value="[^"]+"/g, 'CSRF')
          .replace(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?Z?)?/g, 'TIME')
          .replace(/test-[a-z0-9]+/g, 'NAME');
      const shown = normal((await browser.get(posted.location!)).text);
      const later = normal((await browser.get('/settings/account')).text);
      // Invited twice: "taken" either way, the address being on the account's own list.
      expect((await browser.post('/settings/account/users', { email, role: 'owner' })).status, email).toBe(422);
      return { shown, later, accountId: account.account.account_id, browser };
    };
    const unknown = await invitedBy('nobody.yet@example.test');
    expect(unknown.shown).toContain('An invitation is mailed to <strong>ADDRESS</strong>');
    expect(unknown.later).toMatch(/<td data-label="Email" class="wide">ADDRESS<\/td><td data-label="Role">member<\/td><td data-label="State">invited<\/td>/);
    const seen = [];
    for (const known of [theirs, operator]) {
      seen.push(await invitedBy(known));
      expect(seen.at(-1)!.shown, known).toBe(unknown.shown);
      expect(seen.at(-1)!.later, known).toBe(unknown.later);
    }
    // Its role changed and removed as an invited teammate's is.
    const { accountId, browser } = seen[0]!;
    const standIn = (await h.services.users.team(accountId)).find((u) => u.email === theirs)!;
    await browser.get('/settings/account');
    expect((await browser.post(`/settings/account/users/${standIn.user_id}`, { role: 'owner' })).status).toBe(303);
    await browser.get('/settings/account');
    expect((await browser.post(`/settings/account/users/${standIn.user_id}`, { action: 'remove' })).status).toBe(303);
    expect((await h.services.users.team(accountId)).find((u) => u.email === theirs)).toMatchObject({ role: 'owner', disabled: true, password_set: false });
    // They are told, in words that pass on no link; nothing of theirs changed.
    const [told] = await eventually('the mail to the address that has an account', async () => mail.mails.filter((m) => m.to.includes(theirs)), (m) => m.length === 1);
    expect(bodyOf(told!.raw)).toContain('already has a Tollwatch account');
    expect(bodyOf(told!.raw)).not.toContain('/invitations/');
    expect(await h.services.users.getUser(them.user_id)).toMatchObject({ account_id: elsewhere.account.account_id, role: 'member', disabled: false });
  });

  it('stores nothing when the mail cannot go, answers 502 and never 500, and refuses addresses mail servers refuse', async () => {
    const refusing = await startMailCatcher({ refuse: (address) => address.startsWith('refused') });
    const h2 = await startHarness({ TOLLWATCH_SMTP_URL: refusing.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' });
    try {
      const account = await h2.account();
      const { browser } = await signedIn(h2, account.account.account_id);
      const invite = async (email: string) => {
        await browser.get('/settings/account');
        return browser.post('/settings/account/users', { email, role: 'member' });
      };
      const stored = async () => (await h2.services.users.list(account.account.account_id)).map((u) => u.email);
      const refusedByServer = await invite('refused@example.test');
      expect(refusedByServer.status).toBe(502);
      expect(refusedByServer.text).toContain('nothing was saved');
      // The probe's address: refused as typed, before any mail or row.
      const hostile = await invite('a"><script>alert(9)</script>@a.test');
      expect(hostile.status).toBe(422);
      expect(hostile.text).not.toContain('<script>alert(9)');
      expect(await stored()).not.toContain('refused@example.test');
      expect((await stored()).some((e) => e.includes('script'))).toBe(false);
      // The mail server gone: the same, and a retry once it is back is not "taken".
      await refusing.close();
      expect((await invite('later@example.test')).status).toBe(502);
      expect(await stored()).not.toContain('later@example.test');
      expect(refusing.mails).toHaveLength(0);
    } finally {
      await h2.close();
      await refusing.close().catch(() => {});
    }
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

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { eventually } from '../support/eventually.ts';
import { makeUser, WebClient } from './web-client.ts';

/** The body of a mail as text: quoted-printable soft breaks joined. */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

/**
 * Forgot your password: a one-time link by email, working for an hour, asked
 * for from the sign-in page; bounded per address asked for and per requester; the same answer
 * whether or not the address has an account.
 */
describe('forgot your password (docs/dashboard.md, "Sessions")', () => {
  let h: Harness;
  let mail: MailCatcher;
  let owner: TestAccount;

  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' });
    owner = await h.account();
  });
  afterAll(async () => {
    await h?.close();
    await mail?.close();
  });

  it('mails a link that sets a new password once, and the new password signs in', async () => {
    const { email, password } = await makeUser(h, owner.account.account_id);
    const browser = new WebClient(h.url);
    expect((await browser.get('/sign-in')).text).toContain('<a href="/forgot-password">Forgot your password?</a>');
    await browser.get('/forgot-password');
    const asked = await browser.post('/forgot-password', { email: email.toUpperCase() });
    expect(asked.status).toBe(303);
    expect((await browser.get(asked.location!)).text).toContain('If an account uses that address');
    const [sent] = await eventually('the reset mail', async () => mail.mails.filter((m) => m.to.includes(email)), (m) => m.length === 1);
    const link = /http:\/\/tollwatch\.test(\/invitations\/twu_[\w-]{43})/.exec(bodyOf(sent!.raw))![1]!;
    const form = await browser.get(link);
    expect(form.text).toContain('Choose a new password');
    expect((await browser.post(link, { password: 'a brand new password', confirm: 'a brand new password' })).status).toBe(303);
    expect((await browser.get(link)).status).toBe(404);
    expect((await new WebClient(h.url).signIn(email, password)).status).toBe(401);
    expect((await new WebClient(h.url).signIn(email, 'a brand new password')).status).toBe(303);
    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 50 });
    expect(audit.find((a) => a.action === 'user.password_reset')?.actor).toBe('self');
  });

  it('answers an unknown address exactly as a known one, and mails nothing', async () => {
    const browser = new WebClient(h.url);
    await browser.get('/forgot-password');
    const before = mail.mails.length;
    const asked = await browser.post('/forgot-password', { email: 'nobody-here@example.test' });
    expect(asked.status).toBe(303);
    expect(asked.location).toBe('/forgot-password?sent=1');
    // What it says is for people who sign in: no operator's command, focus on the notice.
    const said = (await browser.get('/forgot-password?sent=1')).text;
    expect(said).toContain('<p class="notice" role="status" tabindex="-1" autofocus>If an account uses that address');
    expect(said).not.toMatch(/tollwatch [a-z]|<code>/);
    // A known address answered the same; nothing is sent for this one (any mail would be by now:
    // the first mail above arrived within the same wait).
    const { email } = await makeUser(h, owner.account.account_id);
    await browser.post('/forgot-password', { email });
    await eventually('the known address’s mail', async () => mail.mails.filter((m) => m.to.includes(email)).length, (n) => n === 1);
    expect(mail.mails.slice(before).flatMap((m) => m.to)).toEqual([email]);
  });

  it('refuses a fourth request for one address within the hour', async () => {
    const { email } = await makeUser(h, owner.account.account_id);
    const browser = new WebClient(h.url);
    await browser.get('/forgot-password');
    for (let i = 0; i < 3; i++) expect((await browser.post('/forgot-password', { email })).status).toBe(303);
    const refused = await browser.post('/forgot-password', { email });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

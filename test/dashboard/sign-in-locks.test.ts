import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { makeUser, WebClient } from './web-client.ts';

/**
 * Password guessing at sign-in is bounded over time (docs/dashboard.md, "Sign-in"): per email
 * and per address, whatever the password, with the owner told. Before, the right password was
 * honoured from an address whose wrong ones were refused, so 429 against 303 told a guesser
 * which password was right, at hashing speed and without end.
 */
describe('sign-in locks (docs/dashboard.md, "Sign-in")', () => {
  let catcher: MailCatcher;
  let h: Harness;
  let owner: TestAccount;
  let addresses = 0;

  /** A browser at an address of its own, behind the trusted proxy. */
  const browserAt = (address = `198.51.100.${++addresses}`) => new WebClient(h.url, { 'x-forwarded-for': address });

  beforeAll(async () => {
    catcher = await startMailCatcher();
    h = await startHarness(
      { TOLLWATCH_SMTP_URL: catcher.url, TOLLWATCH_MAIL_FROM: 'tollwatch@tollwatch.test', TOLLWATCH_TRUST_PROXY: '127.0.0.1' },
      { signInLocks: { perEmail: { short: 3, long: 5 }, perAddress: { short: 1000, long: 1000 }, shortWindowSeconds: 600, freeFailures: 1000 } },
    );
    owner = await h.account();
  });
  afterAll(async () => {
    await h?.close();
    await catcher?.close();
  });

  it('refuses the right password too once an email is locked, from any address, and tells the owner once', async () => {
    const { email, password } = await makeUser(h, owner.account.account_id);
    // Three guesses, each from a different address: the bound is the email's, not an address's.
    for (let i = 0; i < 3; i++) expect((await browserAt().signIn(email, `guess ${i}`)).status).toBe(401);
    const right = await browserAt().signIn(email.toUpperCase(), password);
    const wrong = await browserAt().signIn(email, 'guess 3');
    // One answer whatever the password: nothing to tell a right guess from a wrong one.
    for (const refused of [right, wrong]) {
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.text).toContain('Too many failed sign-ins.');
    }
    expect(right.text.replace(/name="_csrf" value="[^"]+"/, '')).toBe(wrong.text.replace(/name="_csrf" value="[^"]+"/, ''));
    const mail = await eventually('the lock mail', () => catcher.mails.filter((m) => m.to.includes(email)), (m) => m.length > 0);
    expect(mail[0]!.raw).toContain('Subject: Tollwatch: sign-in to your account is locked');
    // Quoted-printable folds long lines with a soft break (`=` at the end).
    expect(mail[0]!.raw.replace(/=\r\n/g, '')).toContain('is refused until');
    expect(mail[0]!.raw.replace(/=\r\n/g, '')).toContain('even with the right password');
    const audit = await eventually('the lock audit row', () => h.services.audit.list({ limit: 100 }), (rows) => rows.some((r) => r.action === 'auth.throttled'));
    expect(audit.filter((r) => r.action === 'auth.throttled' && (r.detail as { email?: string }).email === email.toUpperCase())).toHaveLength(1);
    expect(catcher.mails.filter((m) => m.to.includes(email))).toHaveLength(1);
  });

  it('checks no more passwords than the bound, however many guesses arrive at once', async () => {
    const { email, password } = await makeUser(h, owner.account.account_id);
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => browserAt().signIn(email, i === 19 ? password : `burst ${i}`)));
    const statuses = burst.map((p) => p.status);
    // Exactly three guesses reached a password check; the rest were refused unseen.
    expect(statuses.filter((s) => s === 429)).toHaveLength(17);
    expect(statuses.filter((s) => s === 401 || s === 303)).toHaveLength(3);
  });

  it('bounds guesses over the long window too: the short lock ends, the day’s does not', async () => {
    const quick = await startHarness({ TOLLWATCH_TRUST_PROXY: '127.0.0.1' }, { signInLocks: { perEmail: { short: 3, long: 5 }, shortWindowSeconds: 1 } });
    try {
      const account = await quick.account();
      const { email } = await makeUser(quick, account.account.account_id);
      const guess = async () => (await new WebClient(quick.url, { 'x-forwarded-for': `192.0.2.${++addresses % 250}` }).signIn(email, 'wrong')).status;
      // However the one-second locks fall, exactly five guesses are checked, then none today.
      let checked = 0;
      await eventually('five guesses checked', async () => (checked += (await guess()) === 401 ? 1 : 0), (n) => n === 5);
      const day = await new WebClient(quick.url, { 'x-forwarded-for': '192.0.2.251' }).signIn(email, 'the sixth');
      expect(day.status).toBe(429);
      expect(Number(day.headers.get('retry-after'))).toBeGreaterThan(3600);
      expect(await guess()).toBe(429);
    } finally {
      await quick.close();
    }
  });

  it('costs nothing to sign in right, and a password reset lifts the lock', async () => {
    const { user, email, password } = await makeUser(h, owner.account.account_id);
    for (let i = 0; i < 6; i++) expect((await browserAt('203.0.113.9').signIn(email, password)).status).toBe(303);
    for (let i = 0; i < 3; i++) await browserAt().signIn(email, `wrong ${i}`);
    expect((await browserAt().signIn(email, password)).status).toBe(429);
    const link = await h.services.users.resetPassword(user.user_id);
    const browser = browserAt();
    const path = new URL(link.link).pathname;
    await browser.get(path);
    expect((await browser.post(path, { password: 'a brand new password', confirm: 'a brand new password' })).status).toBe(303);
    expect((await browser.signIn(email, 'a brand new password')).status).toBe(303);
  });
});

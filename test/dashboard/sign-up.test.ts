import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { eventually } from '../support/eventually.ts';
import { makeUser, WebClient } from './web-client.ts';

/** The body of a mail as text: quoted-printable soft breaks joined. */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
const PASSWORD = 'a long sign-up password';

/**
 * Open sign-up (docs/dashboard.md, "Sign-up"): nothing is created before the mailed link is
 * followed, the link works once for 24 hours, an address that has a user is answered like any
 * other (its owner mailed instead), and sign-ups are bounded per address and per network.
 */
describe('open sign-up (TOLLWATCH_SIGN_UP=open)', () => {
  let h: Harness;
  let mail: MailCatcher;
  let existing: TestAccount;
  let networks = 0;
  let people = 0;
  /** A browser from a network of its own, so the per-network bound is not what a test meets. */
  const browserFrom = (address = `10.${Math.floor(++networks / 250)}.${networks % 250}.7`) => new WebClient(h.url, { 'x-forwarded-for': address });
  const newEmail = () => `person${++people}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const mailsTo = (email: string) => mail.mails.filter((m) => m.to.includes(email));
  const linkIn = (raw: string) => /http:\/\/tollwatch\.test(\/sign-up\/twu_[\w-]{43})/.exec(bodyOf(raw))![1]!;
  const pendingOf = (email: string) => h.services.database.db.selectFrom('sign_ups').selectAll().where('email', '=', email).execute();

  async function signUp(browser: WebClient, fields: { email: string; account_name?: string; password?: string }) {
    await browser.get('/sign-up');
    return browser.post('/sign-up', { account_name: fields.account_name ?? 'My honeypots', password: fields.password ?? PASSWORD, email: fields.email });
  }

  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'tollwatch@tollwatch.test', TOLLWATCH_TRUST_PROXY: '127.0.0.1' });
    existing = await h.account();
  });
  afterAll(async () => {
    await h?.close();
    await mail?.close();
  });

  it('creates nothing until the mailed link is followed, then an account on the sign-up plan with the person as owner, signed in', async () => {
    const email = newEmail();
    const browser = browserFrom();
    expect((await browser.get('/sign-in')).text).toContain('<a href="/sign-up">Create an account</a>');
    const asked = await signUp(browser, { email: email.toUpperCase(), account_name: 'Pbx <Lab>' });
    expect(asked.status).toBe(303);
    expect(asked.location).toBe('/sign-up?sent=1');
    expect((await browser.get('/sign-up?sent=1')).text).toContain('A link to create your account is on its way');
    const [sent] = await eventually('the sign-up mail', () => mailsTo(email), (m) => m.length === 1);
    // Nothing in accounts or users yet: only the pending row, its password hashed, its token hashed.
    expect((await h.services.accounts.listAccounts()).some((a) => a.name === 'Pbx <Lab>')).toBe(false);
    expect(await h.services.database.db.selectFrom('users').select('user_id').where('email', '=', email).execute()).toEqual([]);
    const [pending] = await pendingOf(email);
    expect(pending!.password_hash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(pending)).not.toContain(PASSWORD);
    const link = linkIn(sent!.raw);
    expect(JSON.stringify(pending)).not.toContain(link.split('/').pop()!);
    expect(pending!.token_hash).toMatch(/^[0-9a-f]{64}$/);

    // Opening the link creates nothing either (a mail scanner fetches links); the button does.
    const confirm = await browser.get(link);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Pbx &#60;Lab&#62;');
    expect(confirm.text).not.toContain('Pbx <Lab>');
    expect((await h.services.accounts.listAccounts()).some((a) => a.name === 'Pbx <Lab>')).toBe(false);
    const created = await browser.post(link);
    expect(created.status).toBe(303);
    const page = await browser.get(created.location!);
    expect(page.status).toBe(200);
    expect(page.text).toContain(email);

    const account = (await h.services.accounts.listAccounts()).find((a) => a.name === 'Pbx <Lab>')!;
    expect(account.plan).toBe('tester');
    expect((await h.services.plans.find(account.plan))!.maySubmit).toBe(false);
    const users = await h.services.users.list(account.account_id);
    expect(users.map((u) => [u.email, u.role])).toEqual([[email, 'owner']]);
    const audit = await h.services.audit.list({ accountId: account.account_id, limit: 20 });
    expect(audit.find((a) => a.action === 'user.signed_up')?.actor).toBe(`user:${users[0]!.user_id}`);
    // The password chosen at sign-up signs in.
    expect((await new WebClient(h.url).signIn(email, PASSWORD)).status).toBe(303);
  });

  it('answers an address that has a user exactly as a new one, creates nothing, and mails that user instead', async () => {
    const { email: taken } = await makeUser(h, existing.account.account_id);
    const fresh = newEmail();
    const usersBefore = await h.services.database.db.selectFrom('users').select('user_id').execute();
    const a = browserFrom();
    const b = browserFrom();
    const forTaken = await signUp(a, { email: taken });
    const forFresh = await signUp(b, { email: fresh });
    expect([forTaken.status, forTaken.location, forTaken.text]).toEqual([forFresh.status, forFresh.location, forFresh.text]);
    const [pageTaken, pageFresh] = [await a.get(forTaken.location!), await b.get(forFresh.location!)];
    expect(pageTaken.status).toBe(pageFresh.status);
    // The same page but for its CSRF token.
    const shape = (text: string) => text.replace(/name="_csrf" value="[^"]+"/g, '');
    expect(shape(pageTaken.text)).toBe(shape(pageFresh.text));

    const [warning] = await eventually('the mail to the taken address', () => mailsTo(taken), (m) => m.length === 1);
    expect(bodyOf(warning!.raw)).toContain('tried to create a new Tollwatch account');
    expect(bodyOf(warning!.raw)).not.toMatch(/\/sign-up\/twu_/);
    await eventually('the mail to the new address', () => mailsTo(fresh), (m) => m.length === 1);
    expect(await pendingOf(taken)).toEqual([]);
    expect(await h.services.database.db.selectFrom('users').select('user_id').execute()).toHaveLength(usersBefore.length);
  });

  it('refuses broken fields with 422, naming each, for taken and new addresses alike', async () => {
    const browser = browserFrom();
    const refused = await signUp(browser, { email: 'not an address', password: 'short', account_name: ' ' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('id="email-error"');
    expect(refused.text).toContain('id="password-error"');
    expect(refused.text).toContain('id="account_name-error"');
    const { email: taken } = await makeUser(h, existing.account.account_id);
    const shortForTaken = await signUp(browser, { email: taken, password: 'short' });
    const shortForNew = await signUp(browser, { email: newEmail(), password: 'short' });
    expect(shortForTaken.status).toBe(422);
    expect(shortForNew.status).toBe(422);
    expect(shortForTaken.text).not.toContain('taken');
  });

  it('lets a link work once, and not after it expired', async () => {
    const email = newEmail();
    const browser = browserFrom();
    await signUp(browser, { email, account_name: 'Once only' });
    const [sent] = await eventually('the sign-up mail', () => mailsTo(email), (m) => m.length === 1);
    const link = linkIn(sent!.raw);
    await browser.get(link);
    expect((await browser.post(link)).status).toBe(303);
    // Two presses at once of another link: one account, the other press refused.
    const twice = newEmail();
    await signUp(browserFrom(), { email: twice, account_name: 'Pressed twice' });
    const [twiceMail] = await eventually('the third sign-up mail', () => mailsTo(twice), (m) => m.length === 1);
    const [tabA, tabB] = [new WebClient(h.url), new WebClient(h.url)];
    await Promise.all([tabA.get(linkIn(twiceMail!.raw)), tabB.get(linkIn(twiceMail!.raw))]);
    const presses = await Promise.all([tabA.post(linkIn(twiceMail!.raw)), tabB.post(linkIn(twiceMail!.raw))]);
    expect(presses.map((p) => p.status).sort()).toEqual([303, 404]);
    expect((await h.services.accounts.listAccounts()).filter((a) => a.name === 'Pressed twice')).toHaveLength(1);
    const again = new WebClient(h.url);
    expect((await again.get(link)).status).toBe(404);
    await again.get('/sign-in');
    expect((await again.post(link)).status).toBe(404);
    expect((await h.services.accounts.listAccounts()).filter((a) => a.name === 'Once only')).toHaveLength(1);

    const late = newEmail();
    await signUp(browserFrom(), { email: late, account_name: 'Too late' });
    const [lateMail] = await eventually('the second sign-up mail', () => mailsTo(late), (m) => m.length === 1);
    // 24 hours on: the row's expiry moved into the past, as the clock would have.
    await h.services.database.db.updateTable('sign_ups').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('email', '=', late).execute();
    const lateBrowser = new WebClient(h.url);
    expect((await lateBrowser.get(linkIn(lateMail!.raw))).status).toBe(404);
    await lateBrowser.get('/sign-in');
    expect((await lateBrowser.post(linkIn(lateMail!.raw))).status).toBe(404);
    expect((await h.services.accounts.listAccounts()).some((a) => a.name === 'Too late')).toBe(false);
    // A made-up token is the same 404.
    expect((await lateBrowser.get(`/sign-up/twu_${'A'.repeat(43)}`)).status).toBe(404);
    expect((await lateBrowser.get('/sign-up/nonsense')).status).toBe(404);
  });

  it('refuses a fourth sign-up for one address within the hour with 429 and Retry-After', async () => {
    const email = newEmail();
    for (let i = 0; i < 3; i++) expect((await signUp(browserFrom(), { email })).status).toBe(303);
    const refused = await signUp(browserFrom(), { email: email.toUpperCase() });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts an IPv4 /24 and an IPv6 /64 as one network, 10 sign-ups an hour', async () => {
    for (let i = 1; i <= 10; i++) expect((await signUp(browserFrom(`198.51.100.${i}`), { email: newEmail() })).status).toBe(303);
    const refused = await signUp(browserFrom('198.51.100.250'), { email: newEmail() });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await signUp(browserFrom('198.51.101.1'), { email: newEmail() })).status).toBe(303);

    for (let i = 1; i <= 10; i++) expect((await signUp(browserFrom(`2001:db8:5:6::${i.toString(16)}`), { email: newEmail() })).status).toBe(303);
    expect((await signUp(browserFrom('2001:db8:5:6:ffff:1:2:3'), { email: newEmail() })).status).toBe(429);
    expect((await signUp(browserFrom('2001:db8:5:7::1'), { email: newEmail() })).status).toBe(303);
  });
});

describe('sign-up by invitation only (the default)', () => {
  it('serves no sign-up page and takes no sign-up', async () => {
    const h = await startHarness();
    try {
      const browser = new WebClient(h.url);
      expect((await browser.get('/sign-up')).status).toBe(404);
      expect((await browser.get('/sign-in')).text).not.toContain('/sign-up');
      expect((await browser.post('/sign-up', { account_name: 'X', email: 'x@example.test', password: PASSWORD })).status).toBe(404);
      expect(await h.services.database.db.selectFrom('sign_ups').selectAll().execute()).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it('refuses to start on a sign-up plan that does not exist', async () => {
    const mail = await startMailCatcher();
    try {
      await expect(startHarness({ TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_SIGN_UP_PLAN: 'no_such_plan' })).rejects.toThrow(/TOLLWATCH_SIGN_UP_PLAN: there is no plan "no_such_plan"/);
    } finally {
      await mail.close();
    }
  });

  it('gives confirmed sign-ups the plan TOLLWATCH_SIGN_UP_PLAN names', async () => {
    const mail = await startMailCatcher();
    const h = await startHarness({ TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_SIGN_UP_PLAN: 'business' });
    try {
      const browser = new WebClient(h.url);
      await browser.get('/sign-up');
      expect((await browser.post('/sign-up', { account_name: 'On business', email: 'biz@example.test', password: PASSWORD })).status).toBe(303);
      const [sent] = await eventually('the sign-up mail', () => mail.mails, (m) => m.length === 1);
      const link = /http:\/\/tollwatch\.test(\/sign-up\/twu_[\w-]{43})/.exec(bodyOf(sent!.raw))![1]!;
      await browser.get(link);
      expect((await browser.post(link)).status).toBe(303);
      expect((await h.services.accounts.listAccounts()).find((a) => a.name === 'On business')?.plan).toBe('business');
    } finally {
      await h.close();
      await mail.close();
    }
  });
});

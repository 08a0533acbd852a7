import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditAction } from '../../src/domain/accounts/audit.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { cliEnvironment, runCliHere } from '../support/in-process-cli.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';
import { makeUser, signedIn, WebClient } from './web-client.ts';

/**
 * Two-factor sign-in (docs/dashboard.md, "Two-factor sign-in"), through the pages as a browser
 * uses them, on both stores. Codes are computed with otpauth from the secret the page shows, at
 * the time of the clock the service reads its codes' steps from: the test moves that clock a
 * step for each new code, so no code races the end of its 30 seconds.
 */
describe('two-factor sign-in (docs/dashboard.md, "Two-factor sign-in")', () => {
  let database: TestDatabase;
  let catcher: MailCatcher;
  let h: Harness;
  let accountId: string;
  let clock = Date.parse('2026-12-02T10:00:10.000Z');
  let addresses = 0;

  /** A code from the app, in a step of its own: the clock moves on a step first. */
  const nextCode = (secret: string) => {
    clock += 30_000;
    return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: clock });
  };
  const browserAt = () => new WebClient(h.url, { 'x-forwarded-for': `198.51.100.${++addresses}` });
  const audited = async (action: AuditAction) => (await h.services.audit.list({ limit: 10_000 })).filter((r) => r.action === action);

  /** Sets up two-factor sign-in through the settings page: the secret it shows, and the recovery codes shown once. */
  async function enrol(browser: WebClient) {
    await browser.get('/settings/two-factor');
    const started = await browser.submit('/settings/two-factor/start');
    expect(started.status).toBe(200);
    const secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(started.text)![1]!;
    const shown = await browser.submit('/settings/two-factor/confirm', { code: nextCode(secret) });
    const codes = [...shown.text.matchAll(/<li><code>([a-z2-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    return { secret, codes, page: shown };
  }

  /** Password, then the second step's form with `code`: the answer to that form. */
  async function signInWith(email: string, password: string, code: string, browser = browserAt()) {
    const first = await browser.signIn(email, password);
    expect(first.status).toBe(303);
    expect(first.location).toBe('/sign-in/second-step');
    await browser.get('/sign-in/second-step');
    return { answer: await browser.post('/sign-in/second-step', { code }), browser };
  }

  beforeAll(async () => {
    database = await freshDatabase();
    catcher = await startMailCatcher();
    const env = { DATABASE_URL: database.url, TOLLWATCH_SMTP_URL: catcher.url, TOLLWATCH_MAIL_FROM: 'tollwatch@tollwatch.test', LOG_LEVEL: 'silent' };
    cliEnvironment(env);
    h = await startHarness(
      { ...env, TOLLWATCH_TRUST_PROXY: '127.0.0.1' },
      { twoFactorClock: () => new Date(clock), signInLocks: { perEmail: { short: 5, long: 50 }, perAddress: { short: 1000, long: 1000 }, freeFailures: 1000 } },
    );
    accountId = (await h.account()).account.account_id;
  });
  afterAll(async () => {
    await h?.close();
    await catcher?.close();
    await database?.drop();
  });

  it('enrols with a QR code and the secret shown, refuses a wrong first code, and shows ten recovery codes once', async () => {
    const { browser, user } = await signedIn(h, accountId);
    const off = await browser.get('/settings/two-factor');
    expect(off.text).toContain('Two-factor sign-in is <strong>off</strong>');
    const started = await browser.submit('/settings/two-factor/start');
    expect(started.text).toMatch(/<div class="qr-code"><svg role="img" aria-label="QR code to scan with your authenticator app" focusable="false" xmlns="http:\/\/www.w3.org\/2000\/svg" viewBox="0 0 \d+ \d+"/);
    const secret = /<code id="totp-secret">([A-Z2-7]{32})<\/code>/.exec(started.text)![1]!;
    const uri = /<code id="totp-uri">([^<]+)<\/code>/.exec(started.text)![1]!.replace(/&#38;/g, '&');
    expect(new URL(uri).searchParams.get('secret')).toBe(secret);
    expect(uri).toMatch(/^otpauth:\/\/totp\/Tollwatch%20\(tollwatch\.test\):user\d+-\w+%40example\.test\?issuer=Tollwatch%20\(tollwatch\.test\)&secret=[A-Z2-7]{32}&algorithm=SHA1&digits=6&period=30$/);

    // A wrong first code, or none, leaves it off: the page again, the reason at the field.
    const wrongCode = String((Number(nextCode(secret)) + 1) % 1_000_000).padStart(6, '0');
    for (const code of [wrongCode, '', 'not a code']) {
      const refused = await browser.post('/settings/two-factor/confirm', { code });
      expect(refused.status).toBe(422);
      expect(refused.text).toContain('That code is not the one your app shows now.');
      expect(refused.text).toContain('aria-invalid="true" aria-describedby="confirm-error"');
    }
    expect(await h.services.twoFactor.enrolled(user.user_id)).toBe(false);

    const shown = await browser.submit('/settings/two-factor/confirm', { code: nextCode(secret) });
    const codes = [...shown.text.matchAll(/<li><code>([a-z2-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$/);
    expect(shown.text).toContain('They are shown only now.');
    expect(shown.text).toContain('<strong>10 of 10</strong> recovery codes left');
    // Shown once: the page again shows none.
    const again = await browser.get('/settings/two-factor');
    expect(again.text).not.toContain(codes[0]!);
    expect(again.text).not.toContain(secret);
    expect(await audited('user.two_factor_enabled')).toEqual(expect.arrayContaining([expect.objectContaining({ actor: `user:${user.user_id}`, account_id: accountId })]));

    // Neither the secret nor a recovery code is in the store as such.
    const row = await h.services.database.db.selectFrom('user_two_factor').selectAll().where('user_id', '=', user.user_id).executeTakeFirstOrThrow();
    expect(row.secret).toMatch(/^sealed:v1:/);
    expect(row.secret).not.toContain(secret);
    expect(row.enrolled_at).not.toBeNull();
    const stored = await h.services.database.db.selectFrom('user_recovery_codes').selectAll().where('user_id', '=', user.user_id).execute();
    expect(stored).toHaveLength(10);
    const dump = JSON.stringify(stored);
    for (const code of codes) {
      expect(dump).not.toContain(code);
      expect(dump).not.toContain(code.replace(/-/g, ''));
    }
  });

  it('asks a user with two-factor sign-in for a code after the password, and takes each code once', async () => {
    const { browser, email, password } = await signedIn(h, accountId);
    const { secret } = await enrol(browser);

    // The password alone: no session, a pending sign-in bound to this browser instead.
    const other = browserAt();
    const first = await other.signIn(email, password);
    expect(first.status).toBe(303);
    expect(first.location).toBe('/sign-in/second-step');
    expect(other.cookies.has('tw_session')).toBe(false);
    const pending = other.lastSetCookies.find((c) => c.startsWith('tw_pending='))!;
    expect(pending).toMatch(/HttpOnly/i);
    expect(pending).toMatch(/SameSite=Strict/i);
    expect(pending).toMatch(/Max-Age=300/i);
    expect((await other.get('/overview')).location).toMatch(/^\/sign-in\?next=/);
    const step = await other.get('/sign-in/second-step');
    expect(step.status).toBe(200);
    expect(step.text).toContain('<label for="code">Code from your app, or a recovery code</label>');
    // Only its hash is stored.
    const token = decodeURIComponent(other.cookies.get('tw_pending')!);
    expect(JSON.stringify(await h.services.database.db.selectFrom('pending_sign_ins').selectAll().execute())).not.toContain(token);

    const wrong = await other.post('/sign-in/second-step', { code: '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('That code is wrong, or was used already.');
    expect(other.cookies.has('tw_session')).toBe(false);

    const code = nextCode(secret);
    const right = await other.post('/sign-in/second-step', { code });
    expect(right.status).toBe(303);
    expect(right.location).toBe('/');
    expect(other.cookies.has('tw_session')).toBe(true);
    expect(other.cookies.has('tw_pending')).toBe(false);
    expect((await other.get('/overview')).status).toBe(200);
    // The pending sign-in is spent with it.
    expect((await other.get('/sign-in/second-step')).status).toBe(303);

    // The same code again, in the same window, from another browser: refused, however right it was.
    const replay = await signInWith(email, password, code);
    expect(replay.answer.status).toBe(401);
    expect(replay.browser.cookies.has('tw_session')).toBe(false);
    const fresh = await replay.browser.post('/sign-in/second-step', { code: nextCode(secret) });
    expect(fresh.status).toBe(303);

    // Without the pending cookie (another browser), the step has nothing to complete.
    const stranger = new WebClient(h.url);
    await stranger.get('/sign-in');
    const orphan = await stranger.post('/sign-in/second-step', { code: nextCode(secret) });
    expect(orphan.status).toBe(401);
    expect(orphan.text).toContain('This sign-in has expired or is finished');
  });

  it('takes a recovery code once, and says how many are left', async () => {
    const { browser, email, password } = await signedIn(h, accountId);
    const { codes } = await enrol(browser);
    const used = await signInWith(email, password, codes[3]!.toUpperCase());
    expect(used.answer.status).toBe(303);
    expect(used.answer.location).toBe('/settings/two-factor');
    const page = await used.browser.get('/settings/two-factor');
    expect(page.text).toContain('You signed in with a recovery code, now spent: <strong>9</strong> left.');
    expect(page.text).toContain('<strong>9 of 10</strong> recovery codes left');
    expect(await audited('user.recovery_code_used')).toEqual(expect.arrayContaining([expect.objectContaining({ detail: expect.objectContaining({ email, recovery_codes_left: 9 }) })]));

    const spent = await signInWith(email, password, codes[3]!);
    expect(spent.answer.status).toBe(401);
    expect(spent.browser.cookies.has('tw_session')).toBe(false);
  });

  it('refuses with 429 past the bound of wrong codes, the right code too', async () => {
    const { browser, email, password } = await signedIn(h, accountId);
    const { secret } = await enrol(browser);
    const guesser = browserAt();
    await guesser.signIn(email, password);
    await guesser.get('/sign-in/second-step');
    for (let i = 0; i < 5; i++) expect((await guesser.post('/sign-in/second-step', { code: `00000${i}` })).status).toBe(401);
    // From another address too: the bound is the user's.
    const right = await signInWith(email, password, nextCode(secret));
    expect(right.answer.status).toBe(429);
    expect(Number(right.answer.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(right.answer.text).toContain('Too many wrong codes.');
    expect(right.browser.cookies.has('tw_session')).toBe(false);
    // The settings page's code forms share the bound.
    expect((await browser.post('/settings/two-factor/disable', { code: nextCode(secret) })).status).toBe(429);
    expect(await h.services.twoFactor.enrolled((await h.services.users.list(accountId)).find((u) => u.email === email)!.user_id)).toBe(true);
    // The lock's audit row is written beside the answer, not before it.
    const throttled = await eventually('the lock audited', async () => (await audited('auth.throttled')).filter((r) => (r.detail as { email?: string }).email === email), (rows) => rows.length > 0);
    expect(throttled).toHaveLength(1);
    // Whoever guessed had the password: the user is told, once.
    const mail = await eventually('the lock mail', async () => catcher.mails.filter((m) => m.to.includes(email)), (m) => m.length > 0);
    expect(mail[0]!.raw).toContain('Subject: Tollwatch: too many wrong two-factor codes');
    expect(mail[0]!.raw.replace(/=\r\n/g, '')).toContain('even the right one');
    expect(catcher.mails.filter((m) => m.to.includes(email))).toHaveLength(1);
  });

  it('turns off, and makes new recovery codes, only for a current code', async () => {
    const { browser, email, password, user } = await signedIn(h, accountId);
    const { secret, codes } = await enrol(browser);
    await browser.get('/settings/two-factor');
    for (const path of ['/settings/two-factor/recovery-codes', '/settings/two-factor/disable']) {
      const refused = await browser.post(path, { code: '123456' });
      expect(refused.status).toBe(422);
      expect(refused.text).toContain('That code is not the one your app shows now.');
    }
    expect(await h.services.twoFactor.enrolled(user.user_id)).toBe(true);

    const renewed = await browser.submit('/settings/two-factor/recovery-codes', { code: nextCode(secret) });
    const fresh = [...renewed.text.matchAll(/<li><code>([a-z2-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(fresh).toHaveLength(10);
    expect(renewed.text).toContain('Your new recovery codes; the old ones no longer work.');
    expect((await signInWith(email, password, codes[0]!)).answer.status).toBe(401);
    expect((await signInWith(email, password, fresh[0]!)).answer.status).toBe(303);

    const off = await browser.submit('/settings/two-factor/disable', { code: nextCode(secret) });
    expect(off.text).toContain('Two-factor sign-in is off: you sign in with your password alone.');
    expect(await h.services.twoFactor.enrolled(user.user_id)).toBe(false);
    expect((await browserAt().signIn(email, password)).location).toBe('/');
    expect(await audited('user.two_factor_disabled')).toEqual(expect.arrayContaining([expect.objectContaining({ actor: `user:${user.user_id}` })]));
    expect(await audited('user.recovery_codes_regenerated')).toEqual(expect.arrayContaining([expect.objectContaining({ actor: `user:${user.user_id}` })]));
  });

  it('keeps a user of an account that requires it on the enrolment page until enrolled', async () => {
    const account = (await h.account()).account.account_id;
    const owner = await signedIn(h, account, 'owner');
    const member = await makeUser(h, account, 'member');
    await owner.browser.get('/settings/account');
    const required = await owner.browser.post('/settings/account/two-factor', { required: 'on' });
    expect(required.status).toBe(303);
    expect(await audited('account.two_factor_required')).toEqual(expect.arrayContaining([expect.objectContaining({ account_id: account, actor: `user:${owner.user.user_id}`, detail: { required: true } })]));
    // The owner too, from the next page on.
    expect((await owner.browser.get('/settings/account')).location).toBe('/settings/two-factor');

    const browser = browserAt();
    const signed = await browser.signIn(member.email, member.password);
    expect(signed.location).toBe('/settings/two-factor');
    const page = await browser.get('/settings/two-factor');
    expect(page.text).toContain('Your account’s owners require two-factor sign-in: set it up to go on.');
    for (const path of ['/overview', '/events', '/settings/account', '/settings/clients']) expect((await browser.get(path)).location, path).toBe('/settings/two-factor');
    expect((await browser.post('/settings/clients', { name: 'sneaky' })).status).toBe(403);
    const { secret } = await enrol(browser);
    expect((await browser.get('/overview')).status).toBe(200);
    // Required, it stays on.
    await browser.get('/settings/two-factor');
    expect(browser.cookies.has('tw_session')).toBe(true);
    const kept = await browser.post('/settings/two-factor/disable', { code: nextCode(secret) });
    expect(kept.status).toBe(422);
    expect(kept.text).toContain('Your account’s owners require two-factor sign-in, so it stays on.');
    // A member may not change the requirement.
    expect((await browser.post('/settings/account/two-factor', { required: 'off' })).status).toBe(403);
  });

  it('links an operator to the set-up from every operator page, and an operator enrols and then signs in with a code', async () => {
    const { browser, email, password, user } = await signedIn(h, null, 'operator');
    const accounts = await browser.get('/operator/accounts');
    expect(accounts.status).toBe(200);
    expect(accounts.text).toContain('<li><a href="/settings/two-factor">Two-factor sign-in</a></li>');
    const settings = await browser.get('/settings/two-factor');
    expect(settings.status).toBe(200);
    expect(settings.text).toContain('<a href="/settings/two-factor" aria-current="page">Two-factor sign-in</a>');
    expect(settings.text).toContain('Two-factor sign-in is <strong>off</strong>');

    const { secret, codes } = await enrol(browser);
    expect(codes).toHaveLength(10);
    expect(await h.services.twoFactor.enrolled(user.user_id)).toBe(true);
    expect(await audited('user.two_factor_enabled')).toEqual(expect.arrayContaining([expect.objectContaining({ actor: `user:${user.user_id}`, account_id: null })]));
    // The password alone no longer signs the operator in; the code does, to the operator's pages.
    const { answer, browser: later } = await signInWith(email, password, nextCode(secret));
    expect(answer.status).toBe(303);
    expect(answer.location).toBe('/');
    expect((await later.get('/operator/accounts')).status).toBe(200);
  });

  it('lets the operator reset it from the CLI: enrolment removed, sessions ended, audited, the user mailed', async () => {
    const { browser, email, password, user } = await signedIn(h, accountId);
    await enrol(browser);
    const run = await runCliHere(['--json', 'users', 'reset-two-factor', user.user_id]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ user_id: user.user_id, email, removed: true, mailed: true });
    expect((await browser.get('/overview')).location).toMatch(/^\/sign-in/);
    expect(await h.services.twoFactor.enrolled(user.user_id)).toBe(false);
    expect(await h.services.database.db.selectFrom('user_recovery_codes').selectAll().where('user_id', '=', user.user_id).execute()).toEqual([]);
    expect((await browserAt().signIn(email, password)).location).toBe('/');
    expect(await audited('user.two_factor_reset')).toEqual(expect.arrayContaining([expect.objectContaining({ actor: 'operator', detail: expect.objectContaining({ user_id: user.user_id, removed: true }) })]));
    const mail = await eventually('the reset mail', async () => catcher.mails.filter((m) => m.to.includes(email)), (m) => m.length > 0);
    expect(mail[0]!.raw).toContain('Subject: Tollwatch: two-factor sign-in was reset');

    // An unknown user: a clear error, nothing else.
    const unknown = await runCliHere(['--json', 'users', 'reset-two-factor', '00000000-0000-4000-8000-000000000000']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('no such user');
  });
});

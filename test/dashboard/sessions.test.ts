import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { makeUser, signedIn, WebClient } from './web-client.ts';

const SESSION = /^tw_session=/;

describe('dashboard sessions (docs/dashboard.md, "Sessions")', () => {
  let h: Harness;
  let owner: TestAccount;

  beforeAll(async () => {
    h = await startHarness({}, { signInLocks: { perAddress: { short: 4, long: 100 }, freeFailures: 100 } });
    owner = await h.account();
  });
  afterAll(() => h?.close());

  it('sets a password through the invitation link once, then signs in with it', async () => {
    const issued = await h.services.users.invite({ accountId: owner.account.account_id, email: 'New.Owner@Example.test', role: 'owner' });
    expect(issued.link).toMatch(/^http:\/\/tollwatch\.test\/invitations\/twu_[\w-]{43}$/);
    const path = new URL(issued.link).pathname;
    const browser = new WebClient(h.url);
    const form = await browser.get(path);
    expect(form.status).toBe(200);
    expect(form.text).toContain('new.owner@example.test');
    const tooShort = await browser.post(path, { password: 'short', confirm: 'short' });
    expect(tooShort.status).toBe(422);
    const set = await browser.post(path, { password: 'a long enough password', confirm: 'a long enough password' });
    expect(set.status).toBe(303);
    expect(set.location).toBe('/sign-in?done=password&email=new.owner%40example.test');
    expect((await browser.get(set.location!)).text).toContain('value="new.owner@example.test"');
    expect((await browser.get(path)).status).toBe(404);
    const signIn = await browser.signIn('new.owner@example.test', 'a long enough password');
    expect(signIn.status).toBe(303);
    expect((await browser.get('/overview')).status).toBe(200);
    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 20 });
    expect(audit.map((a) => a.action)).toEqual(expect.arrayContaining(['user.invited', 'user.password_set', 'user.signed_in']));
    expect(audit.find((a) => a.action === 'user.signed_in')?.actor).toBe(`user:${issued.user.user_id}`);
  });

  it('goes back to the page asked for after sign-in, but never to another site', async () => {
    const { email, password } = await makeUser(h, owner.account.account_id);
    for (const [next, landing] of [
      ['/nodes', '/nodes'],
      ['/events?sip_method=INVITE#top', '/events?sip_method=INVITE#top'],
      ['//evil.example/x', '/'],
      ['/\\evil.example', '/'],
      ['https://evil.example/', '/'],
      // Read as a browser reads them: tabs and line breaks dropped, a backslash a slash.
      ['/\t/evil.example/', '/'],
      ['/\n/evil.example/', '/'],
      ['/\r\n/evil.example', '/'],
      ['/\t\\evil.example', '/'],
      // Dot segments removed by the parser leave `//`, another host to the browser.
      ['/.//evil.example', '/'],
      ['/..//evil.example/path', '/'],
      ['/%2e//evil.example', '/'],
      ['/./\\evil.example', '/'],
      ['/a/..//evil.example', '/'],
      // Characters a Location header cannot carry as they are: percent-encoded, never a 500.
      ['/no\u000bdes', '/no%0Bdes'],
      ['/\u3002', '/%E3%80%82'],
      ['/a\nb', '/ab'],
    ]) {
      const browser = new WebClient(h.url);
      await browser.get(`/sign-in?next=${encodeURIComponent(next!)}`);
      const res = await browser.post('/sign-in', { email, password, next: next! });
      expect(res.location, next).toBe(landing);
    }
  });

  it('sends strangers to sign in, and serves pages with the dashboard policy and no caching', async () => {
    const stranger = new WebClient(h.url);
    const res = await stranger.get('/events');
    expect(res.status).toBe(303);
    expect(res.location).toBe('/sign-in?next=%2Fevents');
    const page = await stranger.get('/sign-in');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.text).not.toMatch(/<script>|style="/);
  });

  it('gives an HttpOnly, SameSite=Lax session cookie, a new id at every sign-in, and ends the old one', async () => {
    const { email, password } = await makeUser(h, owner.account.account_id);
    const browser = new WebClient(h.url);
    await browser.signIn(email, password);
    const cookie = browser.lastSetCookies.find((c) => SESSION.test(c))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/i);
    const first = browser.cookies.get('tw_session')!;
    // Signed in already, the forms carry the session's token: sign in again with it.
    await browser.get('/overview');
    const again = await browser.post('/sign-in', { email, password });
    expect(again.status).toBe(303);
    const second = browser.cookies.get('tw_session')!;
    expect(second).not.toBe(first);
    const old = new WebClient(h.url);
    old.cookies.set('tw_session', first);
    expect((await old.get('/overview')).status).toBe(303);
  });

  it('refuses a state-changing request without the CSRF token, or with another session’s', async () => {
    const a = await signedIn(h, owner.account.account_id);
    const b = await signedIn(h, owner.account.account_id);
    await a.browser.get('/settings/clients');
    await b.browser.get('/settings/clients');
    const none = await a.browser.post('/settings/clients', { name: 'x', permissions: 'read:events' }, null);
    expect(none.status).toBe(403);
    const foreign = await a.browser.post('/settings/clients', { name: 'x', permissions: 'read:events' }, b.browser.csrfToken);
    expect(foreign.status).toBe(403);
    const signIn = await new WebClient(h.url).post('/sign-in', { email: a.email, password: a.password }, null);
    expect(signIn.status).toBe(403);
    expect(await h.services.accounts.listClients(owner.account.account_id)).toHaveLength(1);
  });

  it('signs out one session, or every session of the user at once', async () => {
    const made = await makeUser(h, owner.account.account_id);
    const phone = new WebClient(h.url);
    const laptop = new WebClient(h.url);
    const desk = new WebClient(h.url);
    for (const b of [phone, laptop, desk]) expect((await b.signIn(made.email, made.password)).status).toBe(303);
    await phone.get('/overview');
    expect((await phone.post('/sign-out')).location).toBe('/sign-in?done=signed-out');
    expect((await phone.get('/overview')).status).toBe(303);
    expect((await laptop.get('/overview')).status).toBe(200);
    await laptop.get('/overview');
    const everywhere = await laptop.post('/sign-out-everywhere');
    expect(everywhere.status).toBe(303);
    expect(everywhere.location).toBe('/sign-in?done=signed-out-everywhere');
    expect((await laptop.get(everywhere.location!)).text).toContain('You are signed out on every device.');
    expect((await desk.get('/overview')).status).toBe(303);
    const audit = await h.services.audit.list({ accountId: owner.account.account_id, limit: 50 });
    expect(audit.some((a) => a.action === 'user.signed_out_everywhere' && a.actor === `user:${made.user.user_id}`)).toBe(true);
  });

  it('ends a disabled user’s sessions at once, and refuses their sign-in', async () => {
    const a = await signedIn(h, owner.account.account_id);
    expect((await a.browser.get('/overview')).status).toBe(200);
    await h.services.users.setDisabled(a.user.user_id, true);
    expect((await a.browser.get('/overview')).status).toBe(303);
    expect((await new WebClient(h.url).signIn(a.email, a.password)).status).toBe(401);
  });

  it('refuses owners and members the operator pages, and members the client changes', async () => {
    const ownerUser = await signedIn(h, owner.account.account_id, 'owner');
    const member = await signedIn(h, owner.account.account_id, 'member');
    for (const path of ['/operator/accounts', '/operator/plans', '/operator/audit']) {
      expect((await ownerUser.browser.get(path)).status, path).toBe(403);
      expect((await member.browser.get(path)).status, path).toBe(403);
    }
    expect((await ownerUser.browser.post('/operator/accounts', { name: 'mine', plan: 'business' })).status).toBe(403);
    const list = await member.browser.get('/settings/clients');
    expect(list.status).toBe(200);
    expect(list.text).not.toContain('New client');
    expect((await member.browser.post('/settings/clients', { name: 'nope', permissions: 'read:events' })).status).toBe(403);
    const operator = await signedIn(h, null, 'operator');
    expect((await operator.browser.get('/operator/accounts')).status).toBe(200);
    expect((await operator.browser.get('/events')).status).toBe(403);
  });

  it('refuses a wrong password with one answer for every reason, and throttles repeated failures', async () => {
    const { email } = await makeUser(h, owner.account.account_id);
    const browser = new WebClient(h.url);
    const wrong = await browser.signIn(email, 'not the password at all');
    expect(wrong.status).toBe(401);
    const unknown = await browser.signIn('nobody@example.test', 'not the password at all');
    expect(unknown.status).toBe(401);
    expect(unknown.text).toContain('Wrong email or password.');
    let last = unknown;
    for (let i = 0; i < 4; i += 1) last = await browser.signIn(email, 'still not the password');
    expect(last.status).toBe(429);
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    // One row per failure answered 401, then one row when refusal begins, none per refused attempt.
    const count = async (action: string) => (await h.services.audit.list({ limit: 200 })).filter((a) => a.action === action).length;
    await expect.poll(() => count('auth.throttled')).toBe(1);
    await expect.poll(() => count('user.sign_in_failed')).toBe(4);
    const rows = await h.services.audit.list({ limit: 200 });
    expect(rows.find((a) => a.action === 'auth.throttled')?.detail).toMatchObject({ key: 'address', after: 'user.sign_in_failed' });
  });
});

describe('session lifetimes and https cookies', () => {
  let h: Harness;
  let owner: TestAccount;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_SESSION_IDLE: '1', TOLLWATCH_SESSION_MAX: '3', TOLLWATCH_PUBLIC_URL: 'https://tollwatch.test', TOLLWATCH_AUDIENCE: 'https://tollwatch.test/api' });
    owner = await h.account();
  });
  afterAll(() => h?.close());

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('marks cookies Secure when the public URL is https', async () => {
    const { browser } = await signedIn(h, owner.account.account_id);
    expect(browser.lastSetCookies.find((c) => SESSION.test(c))).toMatch(/Secure/i);
  });

  it('ends a session left idle longer than TOLLWATCH_SESSION_IDLE', async () => {
    const { browser } = await signedIn(h, owner.account.account_id);
    expect((await browser.get('/overview')).status).toBe(200);
    await sleep(1300);
    expect((await browser.get('/overview')).status).toBe(303);
  });

  it('ends a busy session at TOLLWATCH_SESSION_MAX', async () => {
    const { browser } = await signedIn(h, owner.account.account_id);
    const started = Date.now();
    let status = 200;
    while (Date.now() - started < 20_000 && status === 200) {
      status = (await browser.get('/overview')).status;
      if (status === 200) await sleep(300);
    }
    expect(status).toBe(303);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
  });
});

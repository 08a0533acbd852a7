import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { freePort } from '../support/server-process.ts';
import { WebClient, type Page } from './web-client.ts';

/**
 * Single sign-on (docs/operations.md, "Single sign-on"; docs/dashboard.md, "Signing in") over
 * HTTP against a real OpenID provider on loopback: the browser's part at the provider is done
 * by the provider support's small cookie-keeping walk through its login form.
 */

const BASE = { TOLLWATCH_OIDC_ISSUER: 'https://sso.example.com/realms/acme', TOLLWATCH_OIDC_CLIENT_ID: 'tollwatch', TOLLWATCH_OIDC_CLIENT_SECRET: 's3cret-value' };

describe('single sign-on settings, checked at start', () => {
  const load = (env: Record<string, string>) => loadConfig({ TOLLWATCH_PUBLIC_URL: 'https://tollwatch.example.com/', ...env }, false);

  it('is off without settings, and on with issuer, client id and secret', () => {
    expect(load({}).oidc).toBeUndefined();
    expect(load(BASE).oidc).toEqual({
      issuer: BASE.TOLLWATCH_OIDC_ISSUER,
      clientId: 'tollwatch',
      clientSecret: 's3cret-value',
      displayName: 'single sign-on',
      emailDomains: [],
      redirectUri: 'https://tollwatch.example.com/sign-in/oidc/callback',
      allowHttp: false,
    });
    expect(load({ ...BASE, TOLLWATCH_OIDC_NAME: ' Acme SSO ', TOLLWATCH_OIDC_EMAIL_DOMAINS: 'Example.com, @acme.example ,' }).oidc).toMatchObject({ displayName: 'Acme SSO', emailDomains: ['example.com', 'acme.example'] });
    expect(load({ ...BASE, TOLLWATCH_OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidc?.allowHttp).toBe(true);
  });

  it('refuses a partial, insecure or malformed setting, naming the variable and never the secret', () => {
    const refusals: [Record<string, string>, RegExp][] = [
      [{ TOLLWATCH_OIDC_ISSUER: BASE.TOLLWATCH_OIDC_ISSUER }, /needs all of TOLLWATCH_OIDC_ISSUER, TOLLWATCH_OIDC_CLIENT_ID and TOLLWATCH_OIDC_CLIENT_SECRET/],
      [{ ...BASE, TOLLWATCH_OIDC_CLIENT_SECRET: '' }, /needs all of/],
      [{ TOLLWATCH_OIDC_NAME: 'Acme SSO' }, /TOLLWATCH_OIDC_NAME and TOLLWATCH_OIDC_EMAIL_DOMAINS need/],
      [{ ...BASE, TOLLWATCH_OIDC_ISSUER: 'http://sso.example.com' }, /must be an https URL \(plain http only on loopback\)/],
      [{ ...BASE, TOLLWATCH_OIDC_ISSUER: 'sso.example.com' }, /TOLLWATCH_OIDC_ISSUER=sso\.example\.com is not a URL/],
      [{ ...BASE, TOLLWATCH_OIDC_ISSUER: 'https://sso.example.com/?tenant=1' }, /no query or fragment/],
      [{ ...BASE, TOLLWATCH_OIDC_EMAIL_DOMAINS: 'example.com,not a domain' }, /TOLLWATCH_OIDC_EMAIL_DOMAINS: "not a domain" is not a domain name/],
      [{ ...BASE, TOLLWATCH_OIDC_NAME: 'x'.repeat(61) }, /TOLLWATCH_OIDC_NAME must be at most 60 characters/],
    ];
    for (const [env, message] of refusals) {
      let thrown: unknown;
      try {
        load(env);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(env)).toBeInstanceOf(Error);
      expect((thrown as Error).message).toMatch(message);
      expect((thrown as Error).message).not.toContain('s3cret-value');
    }
  });
});

describe('single sign-on through a real provider', () => {
  let provider: TestOidcProvider;
  /** Signup off, any domain. */
  let h: Harness;
  /** Open sign-up, addresses at example.com only. */
  let open: Harness;
  let ownerAccountId: string;
  /** Open sign-up needs a mail server: the confirmation of a password sign-up goes by mail. */
  let catcher: MailCatcher;

  beforeAll(async () => {
    const [port, openPort] = [await freePort(), await freePort()];
    const urls = [port, openPort].map((p) => `http://127.0.0.1:${p}`);
    provider = await startOidcProvider(
      urls.map((url) => `${url}/sign-in/oidc/callback`),
      [
        { sub: 'alice-1', email: 'Alice@Example.com', emailVerified: true, name: 'Alice' },
        { sub: 'mallory-2', email: 'mallory@example.com', emailVerified: false },
        { sub: 'olivia-3', email: 'olivia@elsewhere.example', emailVerified: true },
        { sub: 'nadia-4', email: 'nadia@example.com', emailVerified: true, name: 'Nadia Labs' },
        { sub: 'dora-5', email: 'dora@example.com', emailVerified: true },
      ],
    );
    catcher = await startMailCatcher();
    h = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: urls[0]!, ...provider.env() });
    open = await startHarness({ PORT: String(openPort), TOLLWATCH_PUBLIC_URL: urls[1]!, TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: catcher.url, ...provider.env({ TOLLWATCH_OIDC_EMAIL_DOMAINS: 'example.com' }) });
    ownerAccountId = (await h.account()).account.account_id;
  });
  afterAll(async () => {
    await h?.close();
    await open?.close();
    await provider?.stop();
    await catcher?.close();
  });

  /** Starts an attempt in `browser` and walks the provider as `sub`: the callback path the provider sends the browser back to. */
  async function throughProvider(browser: WebClient, sub: string, options: { abort?: boolean; next?: string } = {}): Promise<string> {
    const begun = await browser.get(`/sign-in/oidc${options.next ? `?next=${encodeURIComponent(options.next)}` : ''}`);
    expect(begun.status).toBe(303);
    const authorization = new URL(begun.location!);
    expect(authorization.origin).toBe(provider.issuer);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    const callback = new URL(await provider.signIn(authorization.href, sub, options));
    return `${callback.pathname}${callback.search}`;
  }

  async function failures(harness: Harness, reason: string) {
    return eventually(`a user.sign_in_failed row for ${reason}`, () => harness.services.audit.list({ limit: 200 }), (rows) =>
      rows.some((r) => r.action === 'user.sign_in_failed' && r.detail?.reason === reason && r.detail.method === 'oidc'),
    );
  }

  function refusedPage(page: Page, status: number, words: string) {
    expect(page.status).toBe(status);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('Single sign-on failed');
    expect(page.text).toContain(words);
    expect(page.text).toContain('href="/sign-in"');
  }

  it('offers the provider on the sign-in page, and only where one is configured', async () => {
    expect((await new WebClient(h.url).get('/sign-in')).text).toContain('Sign in with Acme SSO</a>');
    const plain = await startHarness();
    try {
      const page = await new WebClient(plain.url).get('/sign-in');
      expect(page.text).not.toContain('Sign in with');
      expect((await new WebClient(plain.url).get('/sign-in/oidc')).status).toBe(404);
    } finally {
      await plain.close();
    }
  });

  it('signs an existing user in by their verified address, then by (issuer, subject) whatever the address becomes', async () => {
    const issued = await h.services.users.invite({ accountId: ownerAccountId, email: 'alice@example.com', role: 'owner' });
    const browser = new WebClient(h.url);
    const callback = await throughProvider(browser, 'alice-1', { next: '/nodes' });
    const done = await browser.get(callback);
    expect(done.status).toBe(303);
    expect(done.location).toBe('/nodes');
    expect(browser.lastSetCookies.some((line) => /^tw_session=/.test(line) && /HttpOnly/i.test(line))).toBe(true);
    expect((await browser.get('/overview')).text).toContain('alice@example.com');
    const audit = await h.services.audit.list({ accountId: ownerAccountId, limit: 20 });
    expect(audit.find((r) => r.action === 'user.signed_in')).toMatchObject({ actor: `user:${issued.user.user_id}`, detail: { user_id: issued.user.user_id, method: 'oidc' } });

    // The provider now says another address: the link made at the first sign-in still names Alice.
    provider.accounts.set('alice-1', { sub: 'alice-1', email: 'alice.renamed@example.com', emailVerified: true });
    const again = new WebClient(h.url);
    expect((await again.get(await throughProvider(again, 'alice-1'))).status).toBe(303);
    expect((await again.get('/overview')).text).toContain('alice@example.com');
  });

  it('asks a user with two-factor sign-in for a code after the provider, as after a password', async () => {
    const issued = await h.services.users.invite({ accountId: ownerAccountId, email: 'tess@example.com', role: 'member' });
    const user = await h.services.users.getUser(issued.user.user_id);
    const { secret } = await h.services.twoFactor.start(user);
    const [recovery] = await h.services.twoFactor.confirm(user, TOTP.generate({ secret: Secret.fromBase32(secret) }));
    provider.accounts.set('tess-6', { sub: 'tess-6', email: 'tess@example.com', emailVerified: true });

    const browser = new WebClient(h.url);
    const back = await browser.get(await throughProvider(browser, 'tess-6', { next: '/nodes' }));
    expect(back.status).toBe(303);
    expect(back.location).toBe('/sign-in/second-step');
    expect(browser.lastSetCookies.some((line) => /^tw_session=/.test(line))).toBe(false);
    expect((await browser.get('/overview')).status).toBe(303);

    await browser.get('/sign-in/second-step');
    const done = await browser.post('/sign-in/second-step', { code: recovery! });
    expect(done.status).toBe(303);
    expect((await browser.get('/overview')).text).toContain('tess@example.com');
    const audit = await h.services.audit.list({ accountId: ownerAccountId, limit: 50 });
    expect(audit.find((r) => r.action === 'user.signed_in' && r.actor === `user:${user.user_id}`)?.detail).toMatchObject({ method: 'oidc' });
  });

  it('refuses a callback whose state was changed, and one loaded twice', async () => {
    const browser = new WebClient(h.url);
    const callback = await throughProvider(browser, 'alice-1');
    const tampered = callback.replace(/state=[^&]+/, 'state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    refusedPage(await browser.get(tampered), 400, 'did not start in this browser');
    await failures(h, 'state_mismatch');
    // No state at all.
    refusedPage(await browser.get('/sign-in/oidc/callback?code=x'), 400, 'already used or is unknown');

    const second = new WebClient(h.url);
    const good = await throughProvider(second, 'alice-1');
    expect((await second.get(good)).status).toBe(303);
    refusedPage(await second.get(good), 400, 'already used or is unknown');
    await failures(h, 'attempt_unknown');
  });

  it('refuses a code the provider already redeemed, under a fresh attempt of the same browser', async () => {
    const browser = new WebClient(h.url);
    const first = await throughProvider(browser, 'alice-1');
    expect((await browser.get(first)).status).toBe(303);
    const fresh = new URL(await throughProvider(browser, 'alice-1'), h.url);
    fresh.searchParams.set('code', new URL(first, h.url).searchParams.get('code')!);
    refusedPage(await browser.get(`${fresh.pathname}${fresh.search}`), 400, 'used already or has expired');
    await failures(h, 'code_refused');
  });

  it('refuses an attempt older than ten minutes', async () => {
    const browser = new WebClient(h.url);
    const callback = await throughProvider(browser, 'alice-1');
    await h.services.database.db.updateTable('oidc_attempts').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute();
    refusedPage(await browser.get(callback), 400, 'has expired');
    await failures(h, 'attempt_expired');
  });

  it('shows the provider declining (access_denied) as a page', async () => {
    const browser = new WebClient(h.url);
    const callback = await throughProvider(browser, 'alice-1', { abort: true });
    expect(callback).toContain('error=access_denied');
    refusedPage(await browser.get(callback), 403, 'access_denied');
    await failures(h, 'provider_error');
  });

  it('refuses an unverified address, and an address no user has while sign-up is off, without signing in', async () => {
    await h.services.users.invite({ accountId: ownerAccountId, email: 'mallory@example.com', role: 'member' });
    const browser = new WebClient(h.url);
    refusedPage(await browser.get(await throughProvider(browser, 'mallory-2')), 403, 'has not verified the address mallory@example.com');
    await failures(h, 'email_unverified');
    expect(browser.cookies.has('tw_session')).toBe(false);

    refusedPage(await browser.get(await throughProvider(browser, 'dora-5')), 403, 'There is no account for dora@example.com');
    await failures(h, 'no_account');
    expect(await h.services.users.list(null)).not.toContainEqual(expect.objectContaining({ email: 'dora@example.com' }));
  });

  it('refuses a disabled user', async () => {
    const issued = await h.services.users.invite({ accountId: ownerAccountId, email: 'olivia@elsewhere.example', role: 'member' });
    await h.services.users.setDisabled(issued.user.user_id, true);
    const browser = new WebClient(h.url);
    refusedPage(await browser.get(await throughProvider(browser, 'olivia-3')), 403, 'is disabled');
    await failures(h, 'user_disabled');
  });

  it('with open sign-up, opens an account on the tester plan for a new verified address in an allowed domain', async () => {
    const browser = new WebClient(open.url);
    const done = await browser.get(await throughProvider(browser, 'nadia-4'));
    expect(done.status).toBe(303);
    const overview = await browser.get('/overview');
    expect(overview.status).toBe(200);
    expect(overview.text).toContain('nadia@example.com');
    const nadia = await open.services.database.db.selectFrom('users').selectAll().where('email', '=', 'nadia@example.com').executeTakeFirstOrThrow();
    expect(nadia).toMatchObject({ role: 'owner', password_hash: null });
    const account = await open.services.accounts.getAccount(nadia.account_id!);
    expect(account).toMatchObject({ name: 'Nadia Labs', plan: 'tester' });
    const audit = await open.services.audit.list({ accountId: account.account_id, limit: 20 });
    expect(audit.map((r) => r.action)).toEqual(expect.arrayContaining(['account.created', 'user.signed_up', 'user.signed_in']));
    expect(audit.find((r) => r.action === 'user.signed_up')?.detail).toMatchObject({ via: 'oidc' });
  });

  it('refuses an address outside the allowed domains, even a verified one', async () => {
    const browser = new WebClient(open.url);
    refusedPage(await browser.get(await throughProvider(browser, 'olivia-3')), 403, 'Addresses at elsewhere.example may not sign in here');
    await failures(open, 'domain_not_allowed');
    expect(await open.services.database.db.selectFrom('users').select('email').where('email', '=', 'olivia@elsewhere.example').executeTakeFirst()).toBeUndefined();
  });

  it('answers 502 when the provider is away at the code exchange, and signs in again once it is back', async () => {
    const browser = new WebClient(h.url);
    const callback = await throughProvider(browser, 'alice-1');
    await provider.stop();
    try {
      const page = await browser.get(callback);
      refusedPage(page, 502, 'cannot be reached');
      expect(page.headers.get('retry-after')).toBe('60');
      await failures(h, 'provider_down');
    } finally {
      await provider.start();
    }
    const later = new WebClient(h.url);
    expect((await later.get(await throughProvider(later, 'alice-1'))).status).toBe(303);
  });

  it('answers 502 when the provider\'s discovery document names another issuer than the one configured', async () => {
    const port = await freePort();
    // The same provider, reached by another name: its document says 127.0.0.1, the setting localhost.
    const misnamed = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: `http://127.0.0.1:${port}`, ...provider.env({ TOLLWATCH_OIDC_ISSUER: provider.issuer.replace('127.0.0.1', 'localhost') }) });
    try {
      refusedPage(await new WebClient(misnamed.url).get('/sign-in/oidc'), 502, 'failed verification');
      await failures(misnamed, 'token_invalid');
    } finally {
      await misnamed.close();
    }
  });

  it('starts while the provider is away, answers 502 at sign-in, and discovers it once it is back', async () => {
    await provider.stop();
    let late: Harness | undefined;
    try {
      const port = await freePort();
      // Its callback is not registered at the provider: discovery, not the sign-in, is what is tried here.
      late = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: `http://127.0.0.1:${port}`, ...provider.env() });
      const browser = new WebClient(late.url);
      expect((await browser.get('/sign-in')).text).toContain('Sign in with Acme SSO');
      refusedPage(await browser.get('/sign-in/oidc'), 502, 'cannot be reached');
      await failures(late, 'provider_down');
      await provider.start();
      const begun = await browser.get('/sign-in/oidc');
      expect(begun.status).toBe(303);
      expect(begun.location).toMatch(new RegExp(`^${provider.issuer}/auth\\?`));
    } finally {
      await provider.start();
      await late?.close();
    }
  });

  it('bounds the attempts begun: 60 per address and 200 per network (IPv4 /24, IPv6 /64) in 10 minutes, then 429 with Retry-After and no row', async () => {
    const port = await freePort();
    // Its own instance, behind a proxy that says who asks: only the redirect to the provider is needed here.
    const bounded = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: `http://127.0.0.1:${port}`, TOLLWATCH_TRUST_PROXY: '127.0.0.1', ...provider.env() });
    const begin = (address: string) => new WebClient(bounded.url, { 'x-forwarded-for': address }).get('/sign-in/oidc');
    const attemptsStored = async () => Number((await bounded.services.database.db.selectFrom('oidc_attempts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const refusedWithRetry = async (page: Page) => {
      expect(page.status).toBe(429);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.text).toContain('Too many sign-ins started from your address');
      const retryAfter = Number(page.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(600);
    };
    try {
      for (let i = 0; i < 60; i++) expect((await begin('203.0.113.7')).status).toBe(303);
      const stored = await attemptsStored();
      await refusedWithRetry(await begin('203.0.113.7'));
      expect(await attemptsStored()).toBe(stored);
      // Another address of the network still begins (62 of its 200).
      expect((await begin('203.0.113.8')).status).toBe(303);

      // One attempt from each of 200 addresses of a /24, then the network is spent, not the next network.
      for (let i = 1; i <= 200; i++) expect((await begin(`198.51.100.${i}`)).status).toBe(303);
      await refusedWithRetry(await begin('198.51.100.250'));
      expect((await begin('198.51.101.1')).status).toBe(303);

      for (let i = 1; i <= 200; i++) expect((await begin(`2001:db8:5:6::${i.toString(16)}`)).status).toBe(303);
      await refusedWithRetry(await begin('2001:db8:5:6:ffff:1:2:3'));
      expect((await begin('2001:db8:5:7::1')).status).toBe(303);
    } finally {
      await bounded.close();
    }
  });
});

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AXE_SOURCE, axeViolations, chromiumPresent, launchChromium } from '../support/chromium.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { freePort } from '../support/server-process.ts';

/**
 * Single sign-on in headless Chromium (docs/dashboard.md, "Signing in"): the sign-in page's
 * button, a real OpenID provider's login form on loopback (oidc-provider's development
 * interactions), and back. Skipped with a notice when Chromium is absent, unless
 * TOLLWATCH_REQUIRE_BROWSER=1 (CI), where that is a failure.
 */
const present = chromiumPresent();

describe.skipIf(!present)('single sign-on in a browser', () => {
  let provider: TestOidcProvider;
  let h: Harness;
  let catcher: MailCatcher;
  let browser: Browser;
  let accountId: string;

  beforeAll(async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider(
      [`${url}/sign-in/oidc/callback`],
      [
        { sub: 'ada', email: 'ada@example.com', emailVerified: true },
        { sub: 'unverified', email: 'unverified@example.com', emailVerified: false },
        { sub: 'outsider', email: 'outsider@elsewhere.example', emailVerified: true },
        { sub: 'newcomer', email: 'newcomer@example.com', emailVerified: true, name: 'Newcomer Networks' },
      ],
    );
    // Open sign-up needs a mail server: the confirmation of a password sign-up goes by mail.
    catcher = await startMailCatcher();
    h = await startHarness({ PORT: String(port), TOLLWATCH_PUBLIC_URL: url, TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: catcher.url, ...provider.env({ TOLLWATCH_OIDC_EMAIL_DOMAINS: 'example.com' }) });
    accountId = (await h.account()).account.account_id;
    await h.services.users.invite({ accountId, email: 'ada@example.com', role: 'owner' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await catcher?.close();
    await provider?.stop();
  });

  /** A fresh browser (no cookies here or at the provider) on the sign-in page; with axe-core in its pages when `axe`. */
  async function signInPage(axe = false): Promise<Page> {
    const context = await browser.newContext();
    if (axe) await context.addInitScript(AXE_SOURCE);
    const page = await context.newPage();
    await page.goto(`${h.url}/sign-in`);
    return page;
  }

  /** Clicks the provider's button and signs in at its form as `sub`. */
  async function throughProvider(page: Page, sub: string): Promise<void> {
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await page.waitForURL(`${provider.issuer}/**`);
    await page.locator('input[name=login]').fill(sub);
    await page.locator('input[name=password]').fill('any password');
    await page.locator('button[type=submit]').click();
    // Back here, or held at the provider (provider.holdReturns).
    await page.waitForURL((url) => url.href.startsWith(h.url) || url.pathname.startsWith('/auth/'));
  }

  /** Signs in at the provider as `sub`, held there: the callback URL the provider would have sent the browser to. */
  async function heldReturn(page: Page, sub: string): Promise<string> {
    provider.holdReturns(true);
    try {
      await throughProvider(page, sub);
    } finally {
      provider.holdReturns(false);
    }
    return provider.heldReturn()!;
  }

  async function refusal(page: Page, words: string) {
    await expect.poll(() => page.locator('h1').textContent()).toBe('Single sign-on failed');
    expect(await page.getByRole('alert').textContent()).toContain(words);
  }

  it('signs an existing user in through the provider, and again by the same subject after the address changed', async () => {
    const page = await signInPage(true);
    expect(await axeViolations(page)).toEqual([]);
    await throughProvider(page, 'ada');
    await page.waitForURL(`${h.url}/overview`);
    expect(await page.locator('.who').textContent()).toContain('ada@example.com');
    await page.context().close();

    provider.accounts.set('ada', { sub: 'ada', email: 'ada.lovelace@example.com', emailVerified: true });
    const again = await signInPage();
    await throughProvider(again, 'ada');
    await again.waitForURL(`${h.url}/overview`);
    expect(await again.locator('.who').textContent()).toContain('ada@example.com');
    await again.context().close();
    const rows = await h.services.audit.list({ accountId, limit: 50 });
    expect(rows.filter((r) => r.action === 'user.signed_in' && r.detail?.method === 'oidc')).toHaveLength(2);
  });

  it('refuses a callback whose state was changed, and the same callback loaded twice', async () => {
    const page = await signInPage();
    const tampered = new URL(await heldReturn(page, 'ada'));
    tampered.searchParams.set('state', 'x'.repeat(43));
    expect((await page.goto(tampered.href))?.status()).toBe(400);
    await refusal(page, 'did not start in this browser');

    await page.context().close();

    // A genuine callback signs in once; loaded again, it is refused.
    const replay = await signInPage();
    const genuine = await heldReturn(replay, 'ada');
    await replay.goto(genuine);
    await replay.waitForURL(`${h.url}/overview`);
    expect((await replay.goto(genuine))?.status()).toBe(400);
    await refusal(replay, 'already used or is unknown');
    await replay.context().close();
  });

  it('refuses an unverified address and one outside the allowed domains', async () => {
    const page = await signInPage(true);
    await throughProvider(page, 'unverified');
    await refusal(page, 'has not verified the address unverified@example.com');
    expect(await axeViolations(page)).toEqual([]);
    await page.context().close();

    const outsider = await signInPage();
    await throughProvider(outsider, 'outsider');
    await refusal(outsider, 'Addresses at elsewhere.example may not sign in here');
    await outsider.context().close();
    await eventually('both refusals audited', () => h.services.audit.list({ limit: 100 }), (rows) =>
      ['email_unverified', 'domain_not_allowed'].every((reason) => rows.some((r) => r.action === 'user.sign_in_failed' && r.detail?.reason === reason)),
    );
  });

  it('shows a page, not an error, when the provider is down at the code exchange', async () => {
    const page = await signInPage();
    const callback = await heldReturn(page, 'ada');
    await provider.stop();
    try {
      expect((await page.goto(callback))?.status()).toBe(502);
      await refusal(page, 'cannot be reached');
    } finally {
      await provider.start();
      await page.context().close();
    }
  });

  it('with open sign-up, opens an account for a new verified address', async () => {
    const page = await signInPage();
    await throughProvider(page, 'newcomer');
    await page.waitForURL(`${h.url}/overview`);
    expect(await page.locator('.who').textContent()).toContain('newcomer@example.com · Newcomer Networks');
    await page.context().close();
  });
});

import { Secret, TOTP } from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AXE_SOURCE, axeViolations, chromiumPresent, launchChromium, NARROW, WIDE } from '../support/chromium.ts';
import { startHarness, type Harness } from '../support/harness.ts';

/**
 * Two-factor sign-in in a real browser (docs/dashboard.md, "Two-factor sign-in"): set up from the
 * account page with the QR code drawn, the first code, the recovery codes shown once, then signing
 * out and in again with a code; axe (every WCAG 2.2 AA rule) on the enrolment page and the second
 * step, light and dark, wide and narrow. Skipped without Chromium as test/e2e/dashboard-journey.test.ts is.
 */
const present = chromiumPresent();

describe.skipIf(!present)('two-factor sign-in in a browser', () => {
  let h: Harness;
  let browser: Browser;
  // The clock the service reads codes' steps from: each code the test computes is a step on, so none races a step's end.
  let clock = Date.parse('2026-12-02T10:00:10.000Z');
  const nextCode = (secret: string) => {
    clock += 30_000;
    return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: clock });
  };
  const policyViolations: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    h = await startHarness({}, { twoFactorClock: () => new Date(clock) });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** Every WCAG 2.2 AA fault axe finds on the page as it is, light and dark, wide and narrow, and any overflow past a phone's width. */
  async function axeFaults(page: Page, name: string): Promise<string[]> {
    const faults: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      for (const [width, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
        await page.setViewportSize(viewport);
        const where = `${colorScheme} ${width} ${name}`;
        const violations = await axeViolations(page);
        faults.push(...violations.map((v) => `${where}: ${v}`));
        const overflow = await page.evaluate<number>(`document.documentElement.scrollWidth`);
        if (overflow > viewport.width) faults.push(`${where}: the page is ${overflow}px wide`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize(WIDE);
    return faults;
  }

  it('sets up two-factor sign-in from the account page, then signs in with a code', async () => {
    const account = await h.account();
    const email = 'two-factor-owner@example.test';
    const password = 'correct horse battery two factor';
    const issued = await h.services.users.invite({ accountId: account.account.account_id, email, role: 'owner' });
    await h.services.users.acceptInvitation(issued.link.split('/').pop()!, password);

    const context = await browser.newContext({ viewport: WIDE });
    await context.addInitScript(AXE_SOURCE);
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content[- ]Security[- ]Policy|Refused to/i.test(m.text())) policyViolations.push(m.text());
      else if (m.type() === 'error') pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));

    await page.goto(`${h.url}/sign-in`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/overview$/);

    await page.goto(`${h.url}/settings/account`);
    await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
    await page.waitForURL(/\/settings\/two-factor$/);
    await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
    await page.waitForSelector('.qr-code svg');
    // The QR code is drawn, at a size a phone's camera takes in, and named for screen readers.
    const qr = page.getByRole('img', { name: 'QR code to scan with your authenticator app' });
    const box = (await qr.boundingBox())!;
    expect(box.width).toBeGreaterThanOrEqual(150);
    expect(box.height).toBeGreaterThanOrEqual(150);
    const secret = (await page.locator('#totp-secret').textContent())!;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await page.locator('#totp-uri').textContent()).toContain(`secret=${secret}`);
    const faults = await axeFaults(page, 'enrolment');

    await page.getByLabel('Code from your app').fill(nextCode(secret));
    await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
    await page.waitForSelector('#recovery-codes');
    const codes = await page.locator('#recovery-codes code').allTextContents();
    expect(codes).toHaveLength(10);
    // Shown once: a reload shows none.
    await page.reload();
    expect(await page.locator('#recovery-codes').count()).toBe(0);
    await expect.poll(() => page.getByText('10 of 10').count()).toBe(1);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/sign-in\?done=signed-out$/);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/sign-in\/second-step$/);
    faults.push(...(await axeFaults(page, 'second step')));
    // Not signed in yet: any other page sends the browser to sign in.
    expect((await context.cookies()).some((c) => c.name === 'tw_session')).toBe(false);
    await page.getByLabel('Code from your app, or a recovery code').fill(nextCode(secret));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/overview$/);
    expect((await context.cookies()).some((c) => c.name === 'tw_session')).toBe(true);

    await context.close();
    expect(faults).toEqual([]);
    expect(policyViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

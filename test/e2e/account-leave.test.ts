import { readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeUser } from '../dashboard/web-client.ts';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { AXE_SOURCE, AXE_TAGS, CHROMIUM, CHROMIUM_ARGS, chromiumPresent } from '../support/chromium.ts';
import { eventually } from '../support/eventually.ts';

/**
 * An owner leaves, in a real browser (docs/dashboard.md, "Leaving"): downloads everything,
 * closes the account after typing its name and their password, is signed out and cannot sign in
 * again. Skipped with a notice when Chromium is absent, unless TOLLWATCH_REQUIRE_BROWSER=1.
 */
const present = chromiumPresent();

describe.skipIf(!present)('an owner leaves with their data, in a browser', () => {
  let h: Harness;
  let browser: Browser;
  const faults: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** Every WCAG 2.2 A and AA rule axe-core has, on the page as it is. */
  async function axeViolations(page: Page): Promise<string[]> {
    return page.evaluate<string[]>(`axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(AXE_TAGS)} }, resultTypes: ['violations'] })
      .then((r) => r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' ' + n.target.join(' '))))`);
  }

  async function signIn(page: Page, email: string, password: string) {
    await page.goto(`${h.url}/sign-in`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('downloads the export, closes the account, is signed out and cannot sign in again', async () => {
    const owner = await h.account();
    for (let i = 0; i < 3; i++) expect((await postEvent(owner, sampleEvent())).status).toBe(201);
    const { email, password } = await makeUser(h, owner.account.account_id, 'owner');
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 800 } });
    await context.addInitScript(AXE_SOURCE);
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content[- ]Security[- ]Policy|Refused to/i.test(m.text())) faults.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => faults.push(`${page.url()}: ${err.message}`));

    await signIn(page, email, password);
    await page.waitForURL(/\/overview$/);
    await page.goto(`${h.url}/settings/account`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download everything' }).click()]);
    expect(download.suggestedFilename()).toBe(`tollwatch-account-${owner.account.account_id}.ndjson`);
    const lines = readFileSync((await download.path())!, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; counts?: Record<string, number> });
    expect(lines[0]!.type).toBe('export');
    expect(lines.at(-1)).toMatchObject({ type: 'manifest', counts: { account: 1, user: 1, client: 1, event: 3 } });
    expect(lines.filter((line) => line.type === 'event')).toHaveLength(3);

    await page.getByRole('link', { name: 'Close this account…' }).click();
    await page.waitForURL(/\/settings\/account\/close$/);
    expect(await axeViolations(page)).toEqual([]);
    // On a phone too: clean, and nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await axeViolations(page)).toEqual([]);
    expect(await page.locator('html').evaluate((root) => root.scrollWidth)).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });
    // A wrong name: the form again, the field marked, nothing closed.
    await page.getByLabel('Type the account’s name').fill('not the name');
    await page.getByLabel('Your password').fill(password);
    await page.getByRole('button', { name: 'Close the account for good' }).click();
    await page.getByText('The name typed does not match the account’s name.').first().waitFor();
    expect(await page.getByLabel('Type the account’s name').getAttribute('aria-invalid')).toBe('true');
    expect(await axeViolations(page)).toEqual([]);
    expect((await h.services.accounts.getAccount(owner.account.account_id)).disabled).toBe(false);

    await page.getByLabel('Type the account’s name').fill(owner.account.name);
    await page.getByLabel('Your password').fill(password);
    await page.getByRole('button', { name: 'Close the account for good' }).click();
    await page.getByRole('heading', { name: 'Account closed' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    expect((await context.cookies()).find((c) => c.name === 'tw_session')).toBeUndefined();
    await page.goto(`${h.url}/overview`);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await eventually('the account erased', () => h.services.accountClosing.progress(owner.account.account_id), (p) => p === undefined);

    await signIn(page, email, password);
    await page.getByText('Wrong email or password.').waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    // The refused form (422) and the refused sign-in (401) are pages answered so on purpose, checked above.
    expect(faults.filter((f) => !/status of (401|422)/.test(f))).toEqual([]);
    await context.close();
  });
});

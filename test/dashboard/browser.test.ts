import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleEvent, startHarness, type Harness } from '../support/harness.ts';

/**
 * End to end in a real browser (docs/testing.md): Debian's Chromium, headless, driven by
 * playwright-core. Skipped with a notice when Chromium is absent, unless
 * TOLLWATCH_REQUIRE_BROWSER=1 (CI), where that is a failure.
 */
const CHROMIUM = '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present) {
  const message = `browser test SKIPPED: ${CHROMIUM} is absent (apt-get install chromium)`;
  if (process.env.TOLLWATCH_REQUIRE_BROWSER === '1') throw new Error(`${message}; TOLLWATCH_REQUIRE_BROWSER=1 makes that a failure`);
  console.warn(`\n*** ${message}. ***\n`);
}

const NODE = '44444444-4444-4444-8444-444444444444';
const NUMBER = '+46812118599';

describe.skipIf(!present)('the dashboard in a browser, from invitation to revocation', () => {
  let h: Harness;
  let browser: Browser;
  const policyViolations: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  /** A new browser profile, signed in through the invitation an operator made for a new owner of the account. */
  async function ownerOf(accountId: string, email: string): Promise<Page> {
    const issued = await h.services.users.invite({ accountId, email, role: 'owner' });
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content[- ]Security[- ]Policy|Refused to/i.test(m.text())) policyViolations.push(m.text());
    });
    await page.goto(`${h.url}${new URL(issued.link).pathname}`);
    await page.getByLabel('New password').fill('a browser-made password');
    await page.getByLabel('The same again').fill('a browser-made password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL(/\/sign-in\?done=password$/);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('a browser-made password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/overview$/);
    return page;
  }

  it('invite, sign in, create a client, use it through the API, see and export its events, reset, delete; another account sees nothing', async () => {
    const mine = await h.services.accounts.createAccount({ name: 'Browser fleet', plan: 'contributor' });
    const page = await ownerOf(mine.account_id, 'browser-owner@example.test');
    // The stylesheet applied (its body margin is 0): served from here, allowed by the policy.
    expect(await page.locator('body').evaluate((body) => body.ownerDocument.defaultView!.getComputedStyle(body).margin)).toBe('0px');

    await page.getByRole('link', { name: 'API clients' }).click();
    await page.getByLabel('Name').fill('browser node');
    await page.getByRole('button', { name: 'Create client' }).click();
    const clientId = (await page.locator('#client-id').textContent())!;
    const secret = (await page.locator('#client-secret').textContent())!;
    expect(clientId).toMatch(/^twc_/);
    expect(secret).toMatch(/^tws_/);

    const tokenAnswer = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString(),
    });
    expect(tokenAnswer.status).toBe(200);
    const token = ((await tokenAnswer.json()) as { access_token: string }).access_token;
    const events = [sampleEvent({ created_by_node_id: NODE, called_number: NUMBER }), sampleEvent({ created_by_node_id: NODE, called_number: NUMBER, sip_method: 'OPTIONS' })];
    for (const event of events) {
      const res = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(event) });
      expect(res.status).toBe(201);
    }

    await page.getByRole('link', { name: 'Events' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('SIP method').fill('OPTIONS');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.locator('tbody tr a').first().click();
    expect(await page.locator('pre.sip').textContent()).toContain('INVITE sip:0046812118532');

    await page.getByRole('link', { name: 'Nodes' }).click();
    expect(await page.locator('tbody').textContent()).toContain(NODE);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('link', { name: 'last 30 days' }).click();
    expect(await page.locator('.charts').textContent()).toContain(NUMBER);

    await page.getByRole('link', { name: 'Events' }).click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toMatch(/^app_name,app_version,/);
    // One record per event; their SIP messages hold quoted line breaks of their own.
    expect(csv.match(/^sentrypeer,/gm)).toHaveLength(2);
    for (const event of events) expect(csv).toContain(event.event_uuid as string);

    await page.getByRole('link', { name: 'API clients' }).click();
    await page.locator('tr', { hasText: 'browser node' }).getByRole('link', { name: 'Reset secret…' }).click();
    await page.getByRole('button', { name: 'Reset secret' }).click();
    const newSecret = (await page.locator('#client-secret').textContent())!;
    expect(newSecret).not.toBe(secret);
    const refused = await fetch(`${h.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
    expect(refused.status).toBe(401);

    await page.getByRole('link', { name: 'Back to the clients' }).click();
    await page.locator('tr', { hasText: 'browser node' }).getByRole('link', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete client' }).click();
    await page.waitForURL(/\/settings\/clients$/);
    expect(await page.locator('main').textContent()).not.toContain(clientId);

    const theirs = await h.services.accounts.createAccount({ name: 'Someone else', plan: 'contributor' });
    const other = await ownerOf(theirs.account_id, 'other-owner@example.test');
    await other.getByRole('link', { name: 'Events' }).click();
    expect(await other.locator('main').textContent()).toContain('No events match.');
    await other.getByRole('link', { name: 'Nodes' }).click();
    expect(await other.locator('main').textContent()).not.toContain(NODE);
    await other.goto(`${h.url}/overview?days=30`);
    expect(await other.locator('main').textContent()).not.toContain(NUMBER);
    await other.goto(`${h.url}/events/${events[0]!.event_uuid as string}`);
    expect(await other.locator('h1').textContent()).toBe('Not found');

    expect(policyViolations).toEqual([]);
  });
});

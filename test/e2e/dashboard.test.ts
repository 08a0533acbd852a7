import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditAction, AuditRecord } from '../../src/domain/accounts/audit.ts';
import { sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { AXE_SOURCE, axeViolations, chromiumPresent, launchChromium, NARROW, WIDE } from '../support/chromium.ts';

/**
 * End to end in a real browser (docs/testing.md, `npm run test:e2e`): Debian's Chromium,
 * headless, driven by playwright-core. Skipped with a notice when Chromium is absent, unless
 * TOLLWATCH_REQUIRE_BROWSER=1 (CI), where that is a failure. Every page is saved as a
 * screenshot in each colour scheme, wide and narrow (a phone), by the axe walk in
 * test-artifacts/screenshots/walk/; the states only a journey reaches (a secret shown once, a
 * disabled integration) wide and narrow in test-artifacts/screenshots/ (both ignored by git).
 */
const present = chromiumPresent();

const SCREENSHOTS = join(import.meta.dirname, '../../test-artifacts/screenshots');
const NODE = '44444444-4444-4444-8444-444444444444';
const NUMBER = '+46812118599';
/** Every page of the axe walk, in each scheme and at each width. */
const WALK_SCREENSHOTS = join(SCREENSHOTS, 'walk');

describe.skipIf(!present)('the dashboard in a browser, from invitation to revocation', () => {
  let h: Harness;
  let browser: Browser;
  let receiver: AlertReceiver;
  let mail: MailCatcher;
  const policyViolations: string[] = [];
  /** Errors a page logged, scripts that threw, and resources (not pages) answered with an error. */
  const pageErrors: string[] = [];
  const shots: string[] = [];

  beforeAll(async () => {
    mkdirSync(WALK_SCREENSHOTS, { recursive: true });
    receiver = await startAlertReceiver();
    mail = await startMailCatcher();
    // The webhook the owner makes points at the local receiver: the operator's setting allows it.
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'dashboard@tollwatch.test' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await receiver?.close();
    await mail?.close();
  });

  /** The page as it is now, wide and narrow, whole: `<name>-wide.png` and `<name>-narrow.png`. */
  async function shoot(page: Page, name: string) {
    for (const [size, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
      await page.setViewportSize(viewport);
      const path = join(SCREENSHOTS, `${name}-${size}.png`);
      await page.screenshot({ path, fullPage: true });
      // Readable on a phone: nothing wider than the screen but what scrolls inside its own box (tables).
      if (size === 'narrow') {
        expect(await page.locator('html').evaluate((root) => root.scrollWidth)).toBeLessThanOrEqual(NARROW.width);
      }
      shots.push(path);
    }
    await page.setViewportSize(WIDE);
  }

  /** A page in a new browser profile, its violations and errors recorded. */
  async function newPage(colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
    const context = await browser.newContext({ acceptDownloads: true, viewport: WIDE, colorScheme });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content[- ]Security[- ]Policy|Refused to/i.test(m.text())) policyViolations.push(m.text());
      // A page answered 404 on purpose (the not-found page) is logged as a failed load: pages
      // are checked by the test itself, resources below.
      else if (m.type() === 'error' && !/status of 404/.test(m.text())) pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
    page.on('response', (res) => {
      if (res.status() >= 400 && res.request().resourceType() !== 'document') pageErrors.push(`${res.url()}: ${res.status()}`);
    });
    return page;
  }

  /**
   * Sends a form by clicking `button`, then waits for the page its 303 leads to. Until that page
   * has replaced this one the browser is still on the POST, and a reload then sends it again (or
   * fails, "Not attached to an active page"): a mark left on this document is gone once it has.
   */
  async function submit(page: Page, button: Locator) {
    await page.evaluate(`window.beforeSubmit = true`);
    await button.click();
    await expect.poll(() => page.evaluate<boolean>(`window.beforeSubmit === undefined && document.readyState === 'complete'`), { message: `the page after a form on ${page.url()}` }).toBe(true);
  }

  /** Reloads the page a form led to: a GET of it, never the form's POST sent again. */
  async function reload(page: Page) {
    const answer = await page.reload();
    expect(answer?.request().method(), `reloading ${page.url()}`).toBe('GET');
    expect(answer?.status(), `reloading ${page.url()}`).toBe(200);
  }

  /** The audit entries of one action (of one account), as the store holds them: how often a form's action happened. */
  async function audited(action: AuditAction, accountId?: string): Promise<AuditRecord[]> {
    return (await h.services.audit.list({ limit: 10_000, ...(accountId ? { accountId } : {}) })).filter((e) => e.action === action);
  }

  /** Sets a password through a one-time link (invitation or reset) and signs in with it. */
  async function setPasswordAndSignIn(page: Page, link: string, email: string, password: string, landing: RegExp) {
    await page.goto(`${h.url}${new URL(link).pathname}`);
    await page.getByLabel('New password').fill(password);
    await page.getByLabel('The same again').fill(password);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL(/\/sign-in\?done=password&/);
    expect(await page.getByLabel('Email').inputValue()).toBe(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(landing);
  }

  /** The one-time link in the newest mail to `email`. */
  async function linkMailedTo(email: string, count = 1): Promise<string> {
    const mails = await eventually(`mail ${count} to ${email}`, async () => mail.mails.filter((m) => m.to.includes(email)), (m) => m.length >= count);
    expect(mails).toHaveLength(count);
    const body = mails.at(-1)!.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    return /http:\/\/tollwatch\.test\/invitations\/twu_[\w-]{43}/.exec(body)![0];
  }

  /**
   * Every action on the page (link, button, field, a chart's bar, a data table's toggle) is
   * reached by Tab alone, in the page's order, from the top of the page.
   */
  async function everyActionByKeyboard(page: Page) {
    // Run in the page, as text: the project's types hold no DOM.
    const targets = await page.evaluate<string[]>(`(() => {
      const actions = [...document.querySelectorAll('a[href], button, input:not([type=hidden]):not([type=radio]), select, textarea, summary')].filter((e) => {
        // What a closed <details> holds is not shown, so not reached, until its summary opens it.
        const folded = e.closest('details');
        if (folded && !folded.open && e.parentElement !== folded) return false;
        const box = e.getBoundingClientRect();
        return box.width > 0 && box.height > 0 && !e.disabled && getComputedStyle(e).visibility !== 'hidden';
      });
      actions.forEach((e, i) => e.setAttribute('data-keyboard', String(i)));
      document.activeElement?.blur();
      return actions.map((e) => e.outerHTML.slice(0, 120));
    })()`);
    const reached = new Set<number>();
    for (let press = 0; press < targets.length + 10 && reached.size < targets.length; press++) {
      await page.keyboard.press('Tab');
      const at = await page.evaluate<string | null>(`document.activeElement?.getAttribute('data-keyboard') ?? null`);
      if (at !== null) reached.add(Number(at));
    }
    expect(targets.filter((_, i) => !reached.has(i)), `unreachable by keyboard on ${page.url()}`).toEqual([]);
  }

  /**
   * At a phone's width, no word of a table cell is broken across lines ("OPTION/S", "185.243/.5.1"), and a
   * table's actions are on the screen while the table scrolls sideways under them.
   */
  async function phoneTable(page: Page) {
    await page.setViewportSize(NARROW);
    const broken = await page.evaluate<string[]>(`(() => {
      const found = [];
      for (const cell of document.querySelectorAll('main td')) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let text = walker.nextNode(); text; text = walker.nextNode()) {
          // A line may end after a space or a hyphen, as text does; never elsewhere in a word.
          for (const word of text.data.matchAll(/[^\\s-]+/g)) {
            const range = document.createRange();
            range.setStart(text, word.index);
            range.setEnd(text, word.index + word[0].length);
            if (new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1) found.push(word[0]);
          }
        }
      }
      return found;
    })()`);
    expect(broken, `words broken in the table on ${page.url()}`).toEqual([]);
    for (const action of await page.locator('main td.actions a, main td.actions button').all()) {
      const box = (await action.boundingBox())!;
      expect(box.x + box.width, `an action off the screen on ${page.url()}`).toBeLessThanOrEqual(NARROW.width);
    }
    await page.setViewportSize(WIDE);
  }

  /** A new browser profile, signed in through the invitation an operator made for a new owner of the account. */
  async function userOf(accountId: string | null, email: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
    const issued = await h.services.users.invite({ accountId, email, role: accountId === null ? 'operator' : 'owner' });
    const page = await newPage(colorScheme);
    await page.goto(`${h.url}${new URL(issued.link).pathname}`);
    await page.getByLabel('New password').fill('a browser-made password');
    await page.getByLabel('The same again').fill('a browser-made password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL(/\/sign-in\?done=password&/);
    // The address the password was set for is filled in.
    expect(await page.getByLabel('Email').inputValue()).toBe(email);
    await page.getByLabel('Password').fill('a browser-made password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(accountId === null ? /\/operator\/accounts$/ : /\/overview$/);
    return page;
  }

  it('invite, sign in, create a client, use it through the API, see and export its events, reset, delete; another account sees nothing', async () => {
    const mine = await h.services.accounts.createAccount({ name: 'Browser fleet', plan: 'contributor' });
    const page = await userOf(mine.account_id, 'browser-owner@example.test');
    // The stylesheet applied (its body margin is 0): served from here, allowed by the policy.
    expect(await page.locator('body').evaluate((body) => body.ownerDocument.defaultView!.getComputedStyle(body).margin)).toBe('0px');
    // Keyboard first: the first Tab reaches the skip link, which moves focus past the navigation.
    await page.keyboard.press('Tab');
    expect(await page.locator('body').evaluate((body) => body.ownerDocument.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    // The fragment navigation lands after the key press returns: wait for it, do not sample it.
    await page.waitForURL(/#main$/);

    await page.getByRole('link', { name: 'API clients' }).click();
    await page.getByLabel('Name').fill('browser node');
    await page.getByRole('button', { name: 'Create client' }).click();
    const clientId = (await page.locator('#client-id').textContent())!;
    const secret = (await page.locator('#client-secret').textContent())!;
    expect(clientId).toMatch(/^twc_/);
    expect(secret).toMatch(/^tws_/);
    // Focus starts at what the redirect shows: the notice, then one Tab to the first Copy.
    expect(await page.evaluate<string | null>(`document.activeElement?.className ?? null`)).toBe('notice');
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string | null>(`document.activeElement?.getAttribute('data-copy') ?? null`)).toBe('client-id');
    // Where the page may not write the clipboard (not a secure context), Copy selects the text and says so.
    await page.evaluate(`Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true })`);
    await page.locator('button[data-copy="client-secret"]').click();
    expect(await page.evaluate<string>(`String(window.getSelection())`)).toBe(secret);
    expect(await page.locator('button[data-copy="client-secret"] + .copy-status').textContent()).toContain('the text is selected, press Ctrl+C');
    await shoot(page, 'client-created');

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

    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('SIP method').selectOption('OPTIONS');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.locator('tbody tr a').first().click();
    expect(await page.locator('pre.sip').textContent()).toContain('INVITE sip:0046812118532');

    await page.getByRole('link', { name: 'Nodes' }).click();
    expect(await page.locator('tbody').textContent()).toContain(NODE);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('link', { name: 'last 30 days' }).click();
    expect(await page.locator('.charts').textContent()).toContain(NUMBER);

    await page.getByRole('link', { name: 'Lookup', exact: true }).click();
    await page.getByLabel('Phone number or source address').fill(NUMBER);
    await page.getByRole('button', { name: 'Look up' }).click();
    expect(await page.getByRole('status').textContent()).toContain('SEEN');
    expect(await page.locator('ul.reasons li').count()).toBeGreaterThan(0);

    await page.getByRole('link', { name: 'Integrations', exact: true }).click();
    await page.getByLabel('Name (optional)').fill('fraud desk');
    await page.getByLabel(/^URL/).fill(`${receiver.url}/desk`);
    await page.getByRole('button', { name: 'Create integration' }).click();
    const firstSecret = (await page.locator('#webhook-secret').textContent())!;
    expect(firstSecret).toMatch(/^whsec_/);
    await shoot(page, 'integration-created');
    const integrationId = new URL(page.url()).pathname.split('/').at(-1)!;
    // The page the creation led to: a reload shows the secret no more, and creates nothing.
    await reload(page);
    expect(await page.locator('#webhook-secret').count()).toBe(0);
    // Test alerts by their type: the lookup above may send the desk a lookup alert as well.
    const testAlertsTo = (path: string) => receiver.received.filter((r) => r.path.startsWith(path) && r.body.includes('"type":"integration.test"'));
    // The desk answers after 2 seconds, so its attempt is logged after the page has shown an empty log.
    receiver.answerSlowly('/desk', 2000, 200);
    await submit(page, page.getByRole('button', { name: 'Send a test alert' }));
    await expect.poll(() => testAlertsTo('/desk').length).toBe(1);
    // Its attempt appears in the log on the page as it is, no reload: the page reads its log again.
    const navigations = await page.evaluate<number>(`performance.getEntriesByType('navigation').length`);
    await expect.poll(() => page.locator('#delivery-log tbody tr', { hasText: 'integration.test' }).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.locator('#delivery-log-status').textContent()).toMatch(/^\d+ new delivery attempts? in the log below\.$/);
    expect(await page.evaluate<number>(`performance.getEntriesByType('navigation').length`)).toBe(navigations);
    await shoot(page, 'integration');
    // Reloading the page the test alert led to sends nothing more; the integration pointed
    // elsewhere once, however often the page the change led to is reloaded.
    await reload(page);
    await page.getByLabel(/^URL/).fill(`${receiver.url}/moved`);
    await page.getByRole('button', { name: 'Save' }).click();
    // The page the change led to, then the same reloaded.
    await expect.poll(() => page.locator('dl.credentials').textContent()).toContain(`${receiver.url}/moved`);
    await reload(page);
    await shoot(page, 'integration-changed');
    expect(await page.locator('dl.credentials').textContent()).toContain(`${receiver.url}/moved`);
    await submit(page, page.getByRole('button', { name: 'Send a test alert' }));
    await expect.poll(() => testAlertsTo('/moved').length).toBe(1);
    // One test alert reached the old address.
    expect(testAlertsTo('/desk')).toHaveLength(1);

    // Each of the integration's own forms happens once, however often the page it led to is
    // reloaded: the signing secret rotated (shown once, and the one deliveries are then signed
    // with, beside the first: a second rotation would have put a third in its place),
    const rotations = async () => (await audited('integration.secret_rotated', mine.account_id)).filter((e) => e.detail?.integration_id === integrationId).length;
    await submit(page, page.getByRole('button', { name: 'Rotate the signing secret' }));
    const rotatedSecret = (await page.locator('#webhook-secret').textContent())!;
    expect(rotatedSecret).toMatch(/^whsec_/);
    expect(rotatedSecret).not.toBe(firstSecret);
    await shoot(page, 'integration-rotated');
    await reload(page);
    expect(await page.locator('#webhook-secret').count()).toBe(0);
    expect(await rotations()).toBe(1);
    await submit(page, page.getByRole('button', { name: 'Send a test alert' }));
    await expect.poll(() => testAlertsTo('/moved').length).toBe(2);
    const signed = testAlertsTo('/moved')[1]!;
    expect(String(signed.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [rotatedSecret, firstSecret]) new Webhook(secret).verify(signed.body, signed.headers as Record<string, string>);
    // disabled,
    const stateNow = async () => (await h.services.integrations.get(mine.account_id, integrationId)).status;
    await submit(page, page.getByRole('button', { name: 'Disable' }));
    expect(await page.getByRole('alert').textContent()).toContain('Disabled since');
    await reload(page);
    await shoot(page, 'integration-disabled');
    expect(await stateNow()).toBe('disabled');
    // A control that cannot be used looks it, and says why beside it.
    const testButton = page.getByRole('button', { name: 'Send a test alert' });
    expect(await testButton.isDisabled()).toBe(true);
    expect(await testButton.evaluate((b) => b.ownerDocument.defaultView!.getComputedStyle(b).cursor)).toBe('not-allowed');
    expect(await page.getByRole('button', { name: 'Disable' }).count()).toBe(0);
    expect(await testButton.evaluate((b) => b.ownerDocument.defaultView!.getComputedStyle(b).backgroundColor)).not.toBe(await page.getByRole('button', { name: 'Enable again' }).evaluate((b) => b.ownerDocument.defaultView!.getComputedStyle(b).backgroundColor));
    expect(await page.locator(`#${await testButton.getAttribute('aria-describedby')}`).textContent()).toContain('Enable it first');
    expect(await audited('integration.disabled', mine.account_id)).toHaveLength(1);
    // enabled again,
    await submit(page, page.getByRole('button', { name: 'Enable again' }));
    expect(await page.getByRole('button', { name: 'Disable' }).count()).toBe(1);
    await reload(page);
    expect(await stateNow()).toBe('active');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await audited('integration.enabled', mine.account_id)).toHaveLength(1);
    // and deleted: the list it led to, reloaded, shows no error and deletes nothing more.
    await page.getByRole('link', { name: 'Delete…' }).click();
    await submit(page, page.getByRole('button', { name: 'Delete integration' }));
    expect(page.url()).toMatch(/\/settings\/integrations$/);
    await reload(page);
    expect(await page.locator('main').textContent()).toContain('No integrations yet');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await h.services.integrations.list(mine.account_id)).toEqual([]);
    expect(await audited('integration.deleted', mine.account_id)).toHaveLength(1);

    await page.getByRole('link', { name: 'Events', exact: true }).click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toMatch(/^app_name,app_version,/);
    // One record per event; their SIP messages hold quoted line breaks of their own.
    expect(csv.match(/^sentrypeer,/gm)).toHaveLength(2);
    for (const event of events) expect(csv).toContain(event.event_uuid as string);
    const [ndjsonDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'NDJSON' }).click()]);
    const lines = readFileSync((await ndjsonDownload.path())!, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { event_uuid: string });
    expect(lines.map((e) => e.event_uuid).sort()).toEqual(events.map((e) => e.event_uuid as string).sort());

    await page.getByRole('link', { name: 'API clients' }).click();
    await page.locator('tr', { hasText: 'browser node' }).getByRole('link', { name: 'Reset secret…' }).click();
    await page.getByRole('button', { name: 'Reset secret' }).click();
    const newSecret = (await page.locator('#client-secret').textContent())!;
    expect(newSecret).not.toBe(secret);
    const refused = await fetch(`${h.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
    expect(refused.status).toBe(401);

    // Post/redirect/get: reloading the page the reset led to resets nothing again.
    await reload(page);
    expect(await page.locator('#client-secret').count()).toBe(0);
    expect((await fetch(`${h.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: newSecret }).toString() })).status).toBe(200);
    await page.locator('tr', { hasText: 'browser node' }).getByRole('link', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete client' }).click();
    await page.waitForURL(/\/settings\/clients$/);
    expect(await page.locator('main').textContent()).not.toContain(clientId);
    // Reloading the page the deletion led to deletes nothing else and shows no error.
    await reload(page);
    expect(await page.locator('main').textContent()).not.toContain(clientId);
    expect(await page.getByRole('alert').count()).toBe(0);

    const theirs = await h.services.accounts.createAccount({ name: 'Someone else', plan: 'contributor' });
    const other = await userOf(theirs.account_id, 'other-owner@example.test');
    await other.getByRole('link', { name: 'Events', exact: true }).click();
    expect(await other.locator('main').textContent()).toContain('No events match.');
    await other.getByRole('link', { name: 'Nodes' }).click();
    expect(await other.locator('main').textContent()).not.toContain(NODE);
    await other.goto(`${h.url}/overview?days=30`);
    expect(await other.locator('main').textContent()).not.toContain(NUMBER);
    await other.goto(`${h.url}/events/${events[0]!.event_uuid as string}`);
    expect(await other.locator('h1').textContent()).toBe('Not found');
    // Its exports hold a header line and nothing of the first account's.
    await other.getByRole('link', { name: 'Events', exact: true }).click();
    for (const format of ['CSV', 'NDJSON']) {
      const [theirExport] = await Promise.all([other.waitForEvent('download'), other.getByRole('link', { name: format }).click()]);
      const text = readFileSync((await theirExport.path())!, 'utf8');
      expect(text, format).not.toContain(NODE);
      expect(text.trim().split(/\r?\n/).filter(Boolean), format).toHaveLength(format === 'CSV' ? 1 : 0);
    }
    // Its lookup of the first account's private number: never seen (it is in no shared data set).
    await other.getByRole('link', { name: 'Lookup', exact: true }).click();
    await other.getByLabel('Phone number or source address').fill(NUMBER);
    await other.getByRole('button', { name: 'Look up' }).click();
    expect(await other.getByRole('status').textContent()).toContain('Not seen');
    await other.getByRole('link', { name: 'API clients' }).click();
    expect(await other.locator('main').textContent()).not.toContain(clientId);

    // The operator creates an account and moves it to another plan, trusted: each once, however
    // often the page it led to is reloaded.
    const operator = await userOf(null, 'browser-operator@example.test');
    const operatorMade = async () => (await h.services.accounts.listAccounts()).filter((a) => a.name === 'Operator-made fleet');
    await operator.getByLabel('Name', { exact: true }).fill('Operator-made fleet');
    await submit(operator, operator.getByRole('button', { name: 'Create account' }));
    const madeRow = operator.locator('tr', { hasText: 'Operator-made fleet' });
    expect(await madeRow.count()).toBe(1);
    await reload(operator);
    expect(await madeRow.count()).toBe(1);
    expect(await operatorMade()).toHaveLength(1);
    const [made] = await operatorMade();
    expect(await audited('account.created', made!.account_id)).toHaveLength(1);
    await madeRow.getByLabel('Plan of Operator-made fleet').selectOption('contributor');
    await madeRow.getByLabel('trusted').check();
    await submit(operator, madeRow.getByRole('button', { name: 'Save' }));
    await reload(operator);
    expect(await madeRow.getByLabel('Plan of Operator-made fleet').inputValue()).toBe('contributor');
    expect(await madeRow.getByLabel('trusted').isChecked()).toBe(true);
    expect((await operatorMade()).map((a) => [a.plan, a.trusted])).toEqual([['contributor', true]]);
    expect(await audited('account.plan_changed', made!.account_id)).toHaveLength(1);
    expect(await audited('account.trust_changed', made!.account_id)).toHaveLength(1);

    // The operator raises the contributor plan's lookups, saved once however often the page is
    // reloaded; the owner's account page shows the new limit.
    await operator.getByRole('link', { name: 'Plans', exact: true }).click();
    const contributorSaves = async () => (await audited('plan.saved')).filter((e) => (e.detail?.plan as { name: string }).name === 'contributor').length;
    const savesBefore = await contributorSaves();
    const contributor = operator.getByRole('form', { name: 'Plan contributor' });
    await contributor.getByLabel('Lookups').fill('777/hour');
    await submit(operator, contributor.getByRole('button', { name: 'Save' }));
    await reload(operator);
    expect(await contributor.getByLabel('Lookups').inputValue()).toBe('777/hour');
    expect((await h.services.plans.find('contributor'))?.lookups).toEqual({ limit: 777, windowSeconds: 3600 });
    expect(await contributorSaves()).toBe(savesBefore + 1);
    await operator.getByRole('link', { name: 'Audit trail', exact: true }).click();
    await page.getByRole('link', { name: 'Account', exact: true }).click();
    expect(await page.locator('main').textContent()).toContain('777 an hour');

    // The same pages in the dark scheme look like one product too.
    const dark = await userOf(mine.account_id, 'browser-dark@example.test', 'dark');
    expect(await dark.locator('body').evaluate((body) => body.ownerDocument.defaultView!.getComputedStyle(body).backgroundColor)).toBe('rgb(13, 17, 23)');

    for (const shot of shots) expect(statSync(shot).size).toBeGreaterThan(1000);

    expect(policyViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('drill-down from a chart bar and back, the heatmap against the events, a spoofing user agent shown escaped, every action by keyboard, a teammate and a forgotten password by mail, no reload repeating a form', async () => {
    const mine = await h.services.accounts.createAccount({ name: 'Second fleet', plan: 'contributor' });
    const page = await userOf(mine.account_id, 'second-owner@example.test');
    const client = await h.services.accounts.createClient({ accountId: mine.account_id, name: 'node' });
    const tokenAnswer = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret }),
    });
    const token = ((await tokenAnswer.json()) as { access_token: string }).access_token;
    // Three events two hours ago and one five hours ago, timed from now so the charts keep them.
    const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3600_000);
    const stamp = (d: Date) => `${d.toISOString().slice(0, 19).replace('T', ' ')}.000000`;
    const spoof = 'resu-lanigiro\u202e evil';
    const times = [at(2), at(2), at(2), at(5)];
    for (const [i, time] of times.entries()) {
      const event = sampleEvent({ event_timestamp: stamp(time), called_number: '+441632960777', source_ip: '198.51.100.77', sip_user_agent: i === 0 ? spoof : 'friendly-scanner' });
      const res = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(event) });
      expect(res.status).toBe(201);
    }
    await h.settled();

    // The overview's bar for the number leads to its page, and back.
    await page.goto(`${h.url}/overview?days=1`);
    await everyActionByKeyboard(page);
    await page.locator('svg a[href="/numbers/%2B441632960777"]').click();
    await page.waitForURL(/\/numbers\/%2B441632960777$/);
    expect(await page.locator('h1').textContent()).toContain('+441632960777');
    await everyActionByKeyboard(page);
    await page.goBack();
    await page.waitForURL(/\/overview\?days=1$/);

    // The heatmap's numbers are the events', cell by cell.
    const heatmap = page.locator('figure', { hasText: 'Events by weekday and hour' });
    await heatmap.locator('summary').click();
    const cells = await heatmap.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => Number(td.textContent))));
    const expected = Array.from({ length: 7 }, () => Array.from({ length: 24 }, () => 0));
    for (const time of times) expected[(time.getUTCDay() + 6) % 7]![time.getUTCHours()]! += 1;
    expect(cells).toEqual(expected);

    // The spoofing user agent reads as written, its override shown, not obeyed.
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    const table = (await page.locator('main').textContent())!;
    expect(table).toContain('resu-lanigiro\\u202e evil');
    expect(table).not.toContain('\u202e');
    await page.getByRole('link', { name: '198.51.100.77' }).first().click();
    await page.waitForURL(/\/addresses\/198\.51\.100\.77$/);
    await everyActionByKeyboard(page);

    for (const path of ['/events', '/nodes', '/lookup?q=%2B441632960777', '/settings/clients', '/settings/integrations', '/settings/account']) {
      await page.goto(`${h.url}${path}`);
      await everyActionByKeyboard(page);
      await phoneTable(page);
    }

    // A node named; reloading the page the name led to names nothing again.
    await page.getByRole('link', { name: 'Nodes' }).click();
    await page.locator('form.node-name input[name="name"]').first().fill('Stockholm PoP');
    await submit(page, page.locator('form.node-name button').first());
    expect(await page.locator('main').textContent()).toContain('Stockholm PoP');
    await reload(page);
    await shoot(page, 'nodes-named');

    // A teammate invited as a member by mail, signing in as one; the invitation's reload sends nothing more.
    await page.getByRole('link', { name: 'Account', exact: true }).click();
    await page.getByLabel('Email').fill('second-member@example.test');
    await page.getByLabel(/^Role/).selectOption('member');
    await submit(page, page.getByRole('button', { name: 'Invite' }));
    await shoot(page, 'teammate-invited');
    const invitation = await linkMailedTo('second-member@example.test');
    await reload(page);
    expect(mail.mails.filter((m) => m.to.includes('second-member@example.test'))).toHaveLength(1);
    const member = await newPage();
    await setPasswordAndSignIn(member, invitation, 'second-member@example.test', 'a member password', /\/overview$/);
    await member.getByRole('link', { name: 'API clients' }).click();
    // A member reads and changes nothing: no form to create a client.
    expect(await member.getByRole('button', { name: 'Create client' }).count()).toBe(0);
    expect(await member.locator('main').textContent()).toContain('node');
    await shoot(member, 'clients-as-member');


    // The member forgets their password: a link by mail, asked once however often the page is reloaded.
    const forgetful = await newPage();
    await forgetful.goto(`${h.url}/sign-in`);
    await forgetful.getByRole('link', { name: 'Forgot your password?' }).click();
    await forgetful.getByLabel('Email').fill('second-member@example.test');
    await forgetful.getByRole('button', { name: 'Mail me a link' }).click();
    await forgetful.waitForURL(/\/forgot-password\?sent=1$/);
    await reload(forgetful);
    const reset = await linkMailedTo('second-member@example.test', 2);
    await setPasswordAndSignIn(forgetful, reset, 'second-member@example.test', 'a remembered password', /\/overview$/);
    // Signing out, and reloading the page it led to, leaves them signed out.
    await forgetful.getByRole('button', { name: 'Sign out', exact: true }).click();
    await forgetful.waitForURL(/\/sign-in/);
    await reload(forgetful);
    await forgetful.goto(`${h.url}/overview`);
    await forgetful.waitForURL(/\/sign-in/);

    // The owner makes the member an owner, then removes them: each once, however often reloaded.
    const teammate = page.locator('tr', { hasText: 'second-member@example.test' });
    await teammate.getByRole('button', { name: 'Make owner' }).click();
    await expect.poll(() => teammate.getByRole('button', { name: 'Make member' }).count()).toBe(1);
    await reload(page);
    expect(await teammate.getByRole('button', { name: 'Make member' }).count()).toBe(1);
    await teammate.getByRole('link', { name: 'Remove second-member@example.test…' }).click();
    await page.waitForURL(/\/settings\/account\/users\/[0-9a-f-]+\/remove$/);
    await submit(page, page.getByRole('button', { name: 'Remove second-member@example.test' }));
    expect(await page.evaluate<string | null>(`document.activeElement?.textContent ?? null`)).toContain('second-member@example.test is removed');
    await expect.poll(() => teammate.textContent()).toContain('removed');
    await reload(page);
    expect(await teammate.textContent()).toContain('removed');
    expect(await page.getByRole('alert').count()).toBe(0);
    await shoot(page, 'teammate-removed');

    // Signing out everywhere, from one of two browsers the owner is signed in on, ends both; the
    // page it led to, reloaded, signs nothing out again.
    const elsewhere = await newPage();
    await elsewhere.goto(`${h.url}/sign-in`);
    await elsewhere.getByLabel('Email').fill('second-owner@example.test');
    await elsewhere.getByLabel('Password').fill('a browser-made password');
    await elsewhere.getByRole('button', { name: 'Sign in' }).click();
    await elsewhere.waitForURL(/\/overview$/);
    await submit(page, page.getByRole('button', { name: 'Sign out everywhere' }));
    expect(page.url()).toMatch(/\/sign-in\?done=signed-out-everywhere$/);
    await reload(page);
    await expect.poll(() => page.getByText('You are signed out on every device.').count()).toBe(1);
    expect(await audited('user.signed_out_everywhere', mine.account_id)).toHaveLength(1);
    for (const browserPage of [page, elsewhere]) {
      await browserPage.goto(`${h.url}/overview`);
      await browserPage.waitForURL(/\/sign-in/);
    }

    expect(policyViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('passes axe (every WCAG 2.2 AA rule) on every page at both widths in both colour schemes, charts drawn at their own size, each page kept as a screenshot', async () => {
    const mine = await h.services.accounts.createAccount({ name: 'Contrast fleet', plan: 'contributor' });
    const client = await h.services.accounts.createClient({ accountId: mine.account_id, name: 'contrast node' });
    const token = ((await (await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret }),
    })).json()) as { access_token: string }).access_token;
    for (const called_number of [NUMBER, 'NOT_FOUND']) {
      const answer = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent({ called_number, source_ip: '203.0.113.44', created_by_node_id: NODE, sip_user_agent: 'Cisco-SIPGateway/IOS-15.1.4.M7 WWWWWWWW' })) });
      expect(answer.status).toBe(201);
    }
    await h.settled();
    // A disabled integration: its page holds the one disabled control.
    const made = await h.services.integrations.create(mine, { kind: 'webhook', url: 'http://127.0.0.1:9/contrast' }, 'test');
    await h.services.integrations.update(mine.account_id, made.id, { enabled: false }, 'test');
    const teammate = await h.services.users.invite({ accountId: mine.account_id, email: 'contrast-member@example.test', role: 'member' });
    await h.services.allowlists.add(mine.account_id, { kind: 'phone_number', value: '+46812118500', note: 'our own test line' }, 'test');
    const uuid = (await h.services.eventQuery.list(mine, { limit: 1 })).data[0]!.event_uuid;
    const pages = [
      '/overview', '/overview?days=1', '/events', '/events?sip_method=INVITE', `/events/${uuid}`, `/numbers/${encodeURIComponent(NUMBER)}`, '/addresses/203.0.113.44',
      '/lookup', `/lookup?q=${encodeURIComponent(NUMBER)}`, '/nodes', '/settings/clients', `/settings/clients/${client.client_id}/reset-secret`, `/settings/clients/${client.client_id}/delete`,
      '/settings/integrations', `/settings/integrations/${made.id}`, `/settings/integrations/${made.id}/delete`, '/settings/allowlist', '/settings/account',
      `/settings/account/users/${teammate.user.user_id}/remove`, '/no-such-page',
    ];
    const operatorPages = ['/operator/accounts', '/operator/plans', '/operator/allowlist', '/operator/reports', '/operator/peers', '/operator/audit', '/settings/two-factor'];
    // Before sign-in: an unused invitation's page (reading it spends nothing), sign-in, a forgotten password.
    const invitation = new URL((await h.services.users.invite({ accountId: mine.account_id, email: 'contrast-unused@example.test', role: 'member' })).link).pathname;
    const publicPages = ['/sign-in', '/forgot-password', '/forgot-password?sent=1', invitation];
    const faults: string[] = [];
    const started = performance.now();
    for (const scheme of ['light', 'dark'] as const) {
      const owner = await userOf(mine.account_id, `contrast-${scheme}@example.test`, scheme);
      const operator = await userOf(null, `contrast-operator-${scheme}@example.test`, scheme);
      const visitor = await newPage(scheme);
      // axe-core in every page these browsers load from now on: sent to the browser once, not at each page.
      for (const page of [owner, operator, visitor]) await page.context().addInitScript(AXE_SOURCE);
      for (const [page, paths] of [[owner, pages], [operator, operatorPages], [visitor, publicPages]] as const) {
        for (const path of paths) {
          const answer = await page.goto(`${h.url}${path}`);
          expect(answer?.status(), path).toBe(path === '/no-such-page' ? 404 : 200);
          // One load, both widths: the layout changes with the width, the page does not.
          for (const [width, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
            await page.setViewportSize(viewport);
            const where = `${scheme} ${width} ${path}`;
            const violations = await axeViolations(page);
            faults.push(...violations.map((v) => `${where}: ${v}`));
            // Charts drawn at their own size: no label taller than 12px text makes it, none cut at the chart's edge.
            const labels = await page.evaluate<Array<{ text: string; height: number; inside: boolean }>>(`[...document.querySelectorAll('.chart svg text')].map((t) => {
              const box = t.getBoundingClientRect(), svg = t.closest('svg').getBoundingClientRect();
              return { text: t.textContent, height: box.height, inside: box.left >= svg.left - 0.5 && box.right <= svg.right + 0.5 };
            })`);
            for (const label of labels) {
              if (label.height > 18) faults.push(`${where}: chart label "${label.text}" drawn ${label.height.toFixed(0)}px tall`);
              if (!label.inside) faults.push(`${where}: chart label "${label.text}" cut at the chart's edge`);
            }
            // Nothing wider than the screen but what scrolls in its own box.
            const overflow = await page.evaluate<number>(`document.documentElement.scrollWidth`);
            if (overflow > viewport.width) faults.push(`${where}: the page is ${overflow}px wide`);
            const shot = join(WALK_SCREENSHOTS, `${scheme}-${width}-${path.replace(/^\//, '').replace(/[^\w.-]+/g, '_').slice(0, 80) || 'root'}.png`);
            await page.screenshot({ path: shot, fullPage: true });
            shots.push(shot);
          }
          await page.setViewportSize(WIDE);
        }
      }
      // A phone folds the events filter (no filter in use): its fields are out of the first screen.
      await owner.setViewportSize(NARROW);
      await owner.goto(`${h.url}/events`);
      expect(await owner.locator('details.filters-fold').evaluate((d) => d.hasAttribute('open'))).toBe(false);
      // Each event a card: its called number and user agent on the screen, not scrolled off it.
      for (const label of ['Called number', 'User agent']) {
        const cell = owner.locator(`tbody tr:first-child td[data-label="${label}"]`);
        const box = (await cell.boundingBox())!;
        expect(box.x + box.width, label).toBeLessThanOrEqual(NARROW.width);
      }
      await owner.setViewportSize(WIDE);
    }
    console.info(`axe walk: ${((performance.now() - started) / 1000).toFixed(1)} s, ${shots.filter((s) => s.startsWith(WALK_SCREENSHOTS)).length} screenshots in ${WALK_SCREENSHOTS}`);
    for (const shot of shots) expect(statSync(shot).size).toBeGreaterThan(1000);
    expect(faults).toEqual([]);
    expect(policyViolations).toEqual([]);
  });
});

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AXE_SOURCE, axeViolations, chromiumPresent, launchChromium, NARROW, WIDE } from '../support/chromium.ts';
import { sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';

/**
 * A stranger becomes a contributor in a real browser (docs/dashboard.md, "Sign-up", "Becoming a
 * contributor", "The contributors' board"): signs up, follows the mailed link, asks for the
 * contributor plan, an operator approves, the owner joins the board and finds their alias on it;
 * then axe (every WCAG 2.2 AA rule) on each of these pages, light and dark, wide and narrow.
 * Skipped as test/e2e/dashboard-journey.test.ts is when Chromium is absent.
 */
const present = chromiumPresent();

const PASSWORD = 'a browser-made password';

/** The body of a mail as text: quoted-printable soft breaks joined. */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');

describe.skipIf(!present)('the community in a browser: sign-up to the contributors’ board', () => {
  let h: Harness;
  let browser: Browser;
  let mail: MailCatcher;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SIGN_UP: 'open', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'community@tollwatch.test' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await mail?.close();
  });

  async function newPage(): Promise<Page> {
    const page = await (await browser.newContext({ viewport: WIDE })).newPage();
    page.on('console', (m) => {
      // Pages answered 404 or 422 on purpose are checked by the test itself; anything else is a fault.
      if (m.type() === 'error' && !/status of (404|422)/.test(m.text())) pageErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => pageErrors.push(`${page.url()}: ${err.message}`));
    return page;
  }

  /** Fills and sends the sign-up form, and answers the link the mail brought. */
  async function signUp(page: Page, accountName: string, email: string): Promise<string> {
    await page.goto(`${h.url}/sign-up`);
    await page.getByLabel('Account name').fill(accountName);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel(/^Password/).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForURL(/\/sign-up\?sent=1$/);
    const [sent] = await eventually(`the mail to ${email}`, () => mail.mails.filter((m) => m.to.includes(email)), (m) => m.length === 1);
    return /http:\/\/tollwatch\.test(\/sign-up\/twu_[\w-]{43})/.exec(bodyOf(sent!.raw))![1]!;
  }

  /** An operator, signed in through their invitation. */
  async function operatorPage(email: string): Promise<Page> {
    const issued = await h.services.users.invite({ accountId: null, email, role: 'operator' });
    const page = await newPage();
    await page.goto(`${h.url}${new URL(issued.link).pathname}`);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('The same again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.waitForURL(/\/sign-in\?done=password&/);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/operator\/accounts$/);
    return page;
  }

  /** Milestones' times, printed at the end: where a slow run spent its time. */
  const marks: string[] = [];
  const started = performance.now();
  const mark = (what: string) => marks.push(`${what} ${((performance.now() - started) / 1000).toFixed(1)} s`);

  it('signs up, follows the link, asks for the contributor plan, is approved, joins the board; every page passes axe', async () => {
    mark('start');
    const operator = await operatorPage('community-operator@example.test');
    mark('operator signed in');
    const owner = await newPage();
    const link = await signUp(owner, 'Baltic Pots', 'baltic@example.test');
    await owner.goto(`${h.url}${link}`);
    await owner.getByRole('button', { name: 'Create my account' }).click();
    await owner.waitForURL(/\/settings\/account$/);
    await expect.poll(() => owner.getByText('tester').first().isVisible()).toBe(true);

    await owner.getByLabel(/What honeypots do you run/).fill('Three SentryPeer nodes in Riga');
    await owner.getByRole('button', { name: 'Ask for the contributor plan' }).click();
    await owner.waitForURL(/\/settings\/account#community$/);
    await expect.poll(() => owner.getByText('the operator has not decided yet').isVisible()).toBe(true);
    await eventually('the operator’s mail', () => mail.mails.filter((m) => m.to.includes('community-operator@example.test')), (m) => m.length === 1);

    await operator.goto(`${h.url}/operator/contributors`);
    expect(await operator.getByText('Three SentryPeer nodes in Riga').isVisible()).toBe(true);
    await operator.getByRole('button', { name: 'Approve Baltic Pots' }).click();
    await operator.waitForURL(/\/operator\/contributors$/);
    await expect.poll(() => operator.getByText('No open requests.').isVisible()).toBe(true);
    await eventually('the owner’s mail', () => mail.mails.filter((m) => m.to.includes('baltic@example.test') && /you are a contributor/.test(m.raw)), (m) => m.length === 1);

    mark('approved');
    // Trusted by the operator, its node's events join the shared data set the board counts.
    const account = (await h.services.accounts.listAccounts()).find((a) => a.name === 'Baltic Pots')!;
    expect(account.plan).toBe('contributor');
    await h.services.accounts.setTrusted(account.account_id, true, 'test');
    const client = await h.services.accounts.createClient({ accountId: account.account_id, name: 'riga node' });
    const token = ((await (await fetch(`${h.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret }) })).json()) as { access_token: string }).access_token;
    for (const called_number of ['+37166000001', '+37166000002']) {
      const answer = await fetch(`${h.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent({ called_number })) });
      expect(answer.status).toBe(201);
    }

    await owner.goto(`${h.url}/settings/account`);
    await owner.getByLabel(/Public alias/).fill('Baltic Honeypot Crew');
    await owner.getByRole('button', { name: 'Show this account on the board' }).click();
    await owner.waitForURL(/\/settings\/account#community$/);
    await owner.getByRole('link', { name: 'Contributors', exact: true }).click();
    await owner.waitForURL(/\/contributors$/);
    const line = owner.getByRole('row', { name: /Baltic Honeypot Crew/ });
    expect(await line.textContent()).toMatch(/1\s*Baltic Honeypot Crew\s*2\s*2/);

    // The axe walk: each new page, in both schemes, at both widths. An open request fills the
    // operator's queue, an unused link the confirmation page.
    const asker = await h.services.accounts.createAccount({ name: 'Queue filler', plan: 'tester' });
    const asking = await h.services.users.invite({ accountId: asker.account_id, email: 'asker@example.test', role: 'owner' });
    await h.services.contributorRequests.request((await h.services.users.getUser(asking.user.user_id))!, 'One honeypot behind NAT');
    const unused = await signUp(await newPage(), 'Never confirmed', 'unconfirmed@example.test');
    mark('on the board');
    const faults: string[] = [];
    const visitor = await newPage();
    // One browser each, switched between colour schemes: the pages are the same, only their colours change.
    for (const page of [visitor, owner, operator]) await page.context().addInitScript(AXE_SOURCE);
    const axe = axeViolations;
    const walk: Array<[Page, string]> = [
      [visitor, '/sign-up'],
      [visitor, '/sign-up?sent=1'],
      [visitor, unused],
      [owner, '/settings/account'],
      [owner, '/contributors'],
      [operator, '/operator/contributors'],
      [operator, '/contributors'],
    ];
    for (const [page, path] of walk) {
      expect((await page.goto(`${h.url}${path}`))?.status(), path).toBe(200);
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const [width, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
          await page.setViewportSize(viewport);
          faults.push(...(await axe(page)).map((v) => `${scheme} ${width} ${path}: ${v}`));
          const overflow = await page.evaluate<number>(`document.documentElement.scrollWidth`);
          if (overflow > viewport.width) faults.push(`${scheme} ${width} ${path}: the page is ${overflow}px wide`);
        }
      }
      await page.setViewportSize(WIDE);
    }
    // A refused alias: its page names the field's fault where the field is.
    await owner.goto(`${h.url}/settings/account`);
    await owner.getByLabel(/Public alias/).fill('<b>');
    await owner.getByRole('button', { name: 'Change alias' }).click();
    await expect.poll(() => owner.getByText('The alias must be').first().isVisible()).toBe(true);
    for (const scheme of ['light', 'dark'] as const) {
      await owner.emulateMedia({ colorScheme: scheme });
      faults.push(...(await axe(owner)).map((v) => `${scheme} refused alias: ${v}`));
    }
    mark('axe walk done');
    console.info(`community journey: ${marks.join(', ')}`);
    expect(faults).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

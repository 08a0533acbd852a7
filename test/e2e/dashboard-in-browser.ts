import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { AuditAction, AuditRecord } from '../../src/domain/accounts/audit.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { launchChromium, NARROW, WIDE } from '../support/chromium.ts';

/**
 * What the dashboard's browser tests share (dashboard-*.test.ts, docs/testing.md): a server with
 * a mail catcher and a webhook receiver, headless Chromium, and the steps a person takes. Each
 * file calls dashboardInBrowser() inside its describe block and gets its own server and browser,
 * so the three walks run side by side. Every page is saved as a screenshot in each colour
 * scheme, wide and narrow (a phone), by the axe walk in test-artifacts/screenshots/walk/; the
 * states only a journey reaches (a secret shown once, a disabled integration) wide and narrow in
 * test-artifacts/screenshots/ (both ignored by git).
 */
export const SCREENSHOTS = join(import.meta.dirname, '../../test-artifacts/screenshots');
/** Every page of the axe walk, in each scheme and at each width. */
export const WALK_SCREENSHOTS = join(SCREENSHOTS, 'walk');
export const NODE = '44444444-4444-4444-8444-444444444444';
export const NUMBER = '+46812118599';

export function dashboardInBrowser() {
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

  return {
    get h() {
      return h;
    },
    get receiver() {
      return receiver;
    },
    get mail() {
      return mail;
    },
    policyViolations,
    pageErrors,
    shots,
    shoot,
    newPage,
    submit,
    reload,
    audited,
    setPasswordAndSignIn,
    linkMailedTo,
    everyActionByKeyboard,
    phoneTable,
    userOf,
  };
}

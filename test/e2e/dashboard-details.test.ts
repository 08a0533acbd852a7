import { describe, expect, it } from 'vitest';
import { sampleEvent } from '../support/harness.ts';
import { chromiumPresent } from '../support/chromium.ts';
import { dashboardInBrowser } from './dashboard-in-browser.ts';

/**
 * End to end in a real browser (docs/testing.md, `npm run test:e2e`): the charts, the keyboard,
 * mail to a teammate and a forgotten password, and forms a reload never sends twice.
 * Skipped with a notice when Chromium is absent, unless TOLLWATCH_REQUIRE_BROWSER=1 (CI).
 */
const present = chromiumPresent();

describe.skipIf(!present)('the dashboard in a browser, its details', () => {
  const dashboard = dashboardInBrowser();

  it('drill-down from a chart bar and back, the heatmap against the events, a spoofing user agent shown escaped, every action by keyboard, a teammate and a forgotten password by mail, no reload repeating a form', async () => {
    const { h, mail, policyViolations, pageErrors, shoot, newPage, submit, reload, audited, setPasswordAndSignIn, linkMailedTo, everyActionByKeyboard, phoneTable, userOf } = dashboard;
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
});

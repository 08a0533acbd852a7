import { readFileSync, statSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { sampleEvent } from '../support/harness.ts';
import { chromiumPresent } from '../support/chromium.ts';
import { dashboardInBrowser, NODE, NUMBER } from './dashboard-in-browser.ts';

/**
 * End to end in a real browser (docs/testing.md, `npm run test:e2e`): an owner from invitation to
 * revocation, with an operator and another account beside them.
 * Skipped with a notice when Chromium is absent, unless TOLLWATCH_REQUIRE_BROWSER=1 (CI).
 */
const present = chromiumPresent();

describe.skipIf(!present)('the dashboard in a browser, from invitation to revocation', () => {
  const dashboard = dashboardInBrowser();

  it('invite, sign in, create a client, use it through the API, see and export its events, reset, delete; another account sees nothing', async () => {
    const { h, receiver, policyViolations, pageErrors, shots, shoot, submit, reload, audited, userOf } = dashboard;
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
});

import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleEvent } from '../support/harness.ts';
import { AXE_SOURCE, axeViolations, chromiumPresent, NARROW, WIDE } from '../support/chromium.ts';
import { dashboardInBrowser, NODE, NUMBER, WALK_SCREENSHOTS } from './dashboard-in-browser.ts';

/**
 * End to end in a real browser (docs/testing.md, `npm run test:e2e`): axe (WCAG 2.2 AA) on every
 * page, both widths, both colour schemes, each page kept as a screenshot.
 * Skipped with a notice when Chromium is absent, unless TOLLWATCH_REQUIRE_BROWSER=1 (CI).
 */
const present = chromiumPresent();

describe.skipIf(!present)('the dashboard in a browser, every page for everyone', () => {
  const dashboard = dashboardInBrowser();

  it('passes axe (every WCAG 2.2 AA rule) on every page at both widths in both colour schemes, charts drawn at their own size, each page kept as a screenshot', async () => {
    const { h, policyViolations, shots, newPage, userOf } = dashboard;
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

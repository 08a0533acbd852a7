import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { signedIn } from './web-client.ts';

/** Unknown addresses: a page in the dashboard's layout for a browser, JSON for a program, and the icon. */
describe('addresses nobody serves (docs/dashboard.md)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('answers a browser with a page in the layout, with its navigation when signed in', async () => {
    const anonymous = await fetch(`${h.url}/settings/nothing-here`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(anonymous.status).toBe(404);
    expect(anonymous.headers.get('content-type')).toMatch(/^text\/html/);
    expect(anonymous.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await anonymous.text()).toContain('There is no page at this address.');
    const account = await h.account();
    const { browser } = await signedIn(h, account.account.account_id);
    const page = await browser.get('/no-such-page');
    expect(page.status).toBe(404);
    expect(page.text).toContain('<nav aria-label="Main">');
  });

  it('answers anything else as before, and /api with its problem document', async () => {
    const json = await fetch(`${h.url}/no-such-thing`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(404);
    expect(await json.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
    const api = await fetch(`${h.url}/api/no-such-thing`, { headers: { accept: 'text/html' } });
    expect(api.status).toBe(401);
  });

  it('serves its icon', async () => {
    for (const path of ['/favicon.ico', '/static/favicon.svg']) {
      const icon = await fetch(`${h.url}${path}`);
      expect(icon.status, path).toBe(200);
      expect(icon.headers.get('content-type')).toBe('image/svg+xml');
      expect(await icon.text()).toMatch(/^<svg /);
    }
  });
});

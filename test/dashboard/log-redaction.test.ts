import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startLoggedApp, type LoggedApp } from '../support/logged-app.ts';
import { WebClient } from './web-client.ts';

/**
 * An invitation or password-reset link is a credential: whoever opens an unused one sets the
 * password. The server logs every request's URL at `info`, so those links must be redacted like
 * ingest URLs (docs/operations.md, "Logs").
 */
describe('logs never hold an invitation or reset link', () => {
  let h: Harness;
  let owner: TestAccount;
  let logged: LoggedApp;
  let url: string;
  let lines: string[];

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    // The server's own logger at the default level.
    logged = await startLoggedApp(h, 'info');
    ({ url, lines } = logged);
  });
  afterAll(async () => {
    await logged?.close();
    await h?.close();
  });

  it('redacts every token a walk through invitation, sign-in and reset created, used or not', async () => {
    const invited = await h.services.users.invite({ accountId: owner.account.account_id, email: 'logged@example.test', role: 'owner' });
    const unused = await h.services.users.invite({ accountId: owner.account.account_id, email: 'unused@example.test', role: 'member' });
    const browser = new WebClient(url);
    const path = new URL(invited.link).pathname;
    expect((await browser.get(path)).status).toBe(200);
    expect((await browser.post(path, { password: 'a long enough password', confirm: 'a long enough password' })).status).toBe(303);
    expect((await browser.get(path)).status).toBe(404);
    expect((await browser.signIn('logged@example.test', 'a long enough password')).status).toBe(303);
    const reset = await h.services.users.resetPassword(invited.user.user_id);
    const resetPath = new URL(reset.link).pathname;
    expect((await new WebClient(url).get(resetPath)).status).toBe(200);
    // Opened and refused: a mistyped token, and the unused one with a query string.
    expect((await new WebClient(url).get(`${new URL(unused.link).pathname}?from=mail`)).status).toBe(200);
    expect((await new WebClient(url).get(`${path}x`)).status).toBe(404);

    const tokens = [invited.link, unused.link, reset.link].map((link) => new URL(link).pathname.slice('/invitations/'.length));
    const text = await eventually('every request logged as completed', () => lines.join(''), (t) => (t.match(/"msg":"request completed"/g) ?? []).length >= 8);
    expect(text).toContain('"url":"/invitations/[redacted]?from=mail"');
    for (const token of tokens) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.slice('twu_'.length));
    }
  });
});

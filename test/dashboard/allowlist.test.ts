import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn } from './web-client.ts';

/** The id of the entry a page's remove form names by its value. */
function removeAction(text: string, value: string): string {
  const action = new RegExp(`action="(/(?:settings|operator)/allowlist/[0-9a-f-]{36}/remove)"[^]*?aria-label="Remove ${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`).exec(text)?.[1];
  if (!action) throw new Error(`no entry ${value} on the page`);
  return action;
}

describe('Settings → Allowlist and the operator’s allowlist (docs/dashboard.md)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let account: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    fleet = await h.account({ trusted: true });
    account = await h.account({ permissions: ['read:phone-numbers'] });
    expect((await postEvent(fleet, sampleEvent({ called_number: '+46812118532', sip_method: 'INVITE' }))).status).toBe(201);
    await h.settled();
  });
  afterAll(() => h?.close());

  it('lets an owner add an entry, which the account’s lookups then answer allowlisted, and remove it; every change audited as the user', async () => {
    const { browser, user } = await signedIn(h, account.account.account_id);
    const empty = await browser.get('/settings/allowlist');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('Nothing is allowlisted.');
    expect(empty.text).toContain('<label for="value">');
    expect(empty.text).toContain('aria-current="page"');
    const added = await browser.submit('/settings/allowlist', { kind: 'phone_number', value: '0046 8 121 185 32', note: 'our <test> line' });
    expect(added.text).toContain('<code>+46812118532</code>');
    expect(added.text).toContain('our &#60;test&#62; line');
    expect(await (await account.api('/api/phone-numbers/%2B46812118532')).json()).toMatchObject({ found: true, allowlisted: true, allowlist_entry: { kind: 'phone_number', value: '+46812118532' } });

    const removed = await browser.submit(removeAction(added.text, '+46812118532'));
    expect(removed.text).toContain('Nothing is allowlisted.');
    expect(((await (await account.api('/api/phone-numbers/%2B46812118532')).json()) as Record<string, unknown>).allowlisted).toBeUndefined();
    const audited = (await h.services.audit.list({ accountId: account.account.account_id, limit: 10 })).filter((a) => a.action.startsWith('allowlist.'));
    expect(audited.map((a) => [a.action, a.actor])).toEqual([
      ['allowlist.entry_removed', `user:${user.user_id}`],
      ['allowlist.entry_added', `user:${user.user_id}`],
    ]);
  });

  it('refuses a bad entry with the reason at its field, keeping what was typed, and stores nothing', async () => {
    const { browser } = await signedIn(h, account.account.account_id);
    await browser.get('/settings/allowlist');
    const refused = await browser.post('/settings/allowlist', { kind: 'ip_range', value: '10.0.0.0/33', note: 'lab' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toMatch(/<input id="value" name="value"[^>]*value="10\.0\.0\.0\/33"[^>]*aria-invalid="true" aria-describedby="value-error">/);
    expect(refused.text).toContain('id="value-error">The value must be a range in CIDR notation');
    expect(await h.services.allowlists.list(account.account.account_id)).toEqual([]);
  });

  it('refuses a form without its CSRF token, and shows a member the list without its forms', async () => {
    const { browser } = await signedIn(h, account.account.account_id);
    await browser.get('/settings/allowlist');
    expect((await browser.post('/settings/allowlist', { kind: 'ip_address', value: '192.0.2.1' }, null)).status).toBe(403);
    const member = await signedIn(h, account.account.account_id, 'member');
    const page = await member.browser.get('/settings/allowlist');
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('action="/settings/allowlist"');
    expect(page.text).toContain('Only the account’s owners can change its allowlist.');
    expect((await member.browser.post('/settings/allowlist', { kind: 'ip_address', value: '192.0.2.1' })).status).toBe(403);
    expect(await h.services.allowlists.list(account.account.account_id)).toEqual([]);
  });

  it('lets the operator manage the operator’s list, which an account owner can neither see nor change', async () => {
    const operator = await signedIn(h, null, 'operator');
    expect((await operator.browser.get('/operator/allowlist')).text).toContain('Nothing is allowlisted.');
    const added = await operator.browser.submit('/operator/allowlist', { kind: 'ip_range', value: '2001:DB8::/32' });
    expect(added.text).toContain('<code>2001:db8::/32</code>');
    expect((await h.services.allowlists.list('operator')).map((e) => e.value)).toEqual(['2001:db8::/32']);
    const { browser } = await signedIn(h, account.account.account_id);
    expect((await browser.get('/operator/allowlist')).status).toBe(403);
    expect((await browser.get('/settings/allowlist')).text).not.toContain('2001:db8::/32');
    const removed = await operator.browser.submit(removeAction(added.text, '2001:db8::/32'));
    expect(removed.text).toContain('Nothing is allowlisted.');
    expect((await h.services.audit.list({ limit: 5 })).find((a) => a.action === 'allowlist.entry_removed')).toMatchObject({ actor: `user:${operator.user.user_id}`, account_id: null, detail: { list: 'operator' } });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, WebClient } from './web-client.ts';

describe('operator pages (docs/dashboard.md, "Operators")', () => {
  let h: Harness;
  let owner: TestAccount;
  let operator: Awaited<ReturnType<typeof signedIn>>;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    operator = await signedIn(h, null, 'operator');
  });
  afterAll(() => h?.close());

  it('creates an account and changes its plan, trust and state through the services the CLI uses', async () => {
    const { browser } = operator;
    await browser.get('/operator/accounts');
    expect((await browser.post('/operator/accounts', { name: 'Carrier <x>', plan: 'business' })).status).toBe(303);
    const created = (await h.services.accounts.listAccounts()).find((a) => a.name === 'Carrier <x>')!;
    expect(created).toMatchObject({ plan: 'business', trusted: false, disabled: false });
    const page = await browser.get('/operator/accounts');
    expect(page.text).toContain('Carrier &#60;x&#62;');
    expect((await browser.post(`/operator/accounts/${created.account_id}`, { plan: 'service_provider', trusted: 'yes', disabled: 'yes' })).status).toBe(303);
    expect(await h.services.accounts.getAccount(created.account_id)).toMatchObject({ plan: 'service_provider', trusted: true, disabled: true });
    const audit = await h.services.audit.list({ accountId: created.account_id, limit: 10 });
    expect(audit.map((a) => a.action).sort()).toEqual(['account.created', 'account.disabled', 'account.plan_changed', 'account.trust_changed']);
    expect(new Set(audit.map((a) => a.actor))).toEqual(new Set([`user:${operator.user.user_id}`]));
    expect((await browser.post(`/operator/accounts/${created.account_id}`, { plan: 'no-such-plan' })).status).toBe(422);
  });

  it('signs out the users of a disabled account, as its clients are refused', async () => {
    const member = await signedIn(h, owner.account.account_id, 'member');
    expect((await member.browser.get('/overview')).status).toBe(200);
    await operator.browser.get('/operator/accounts');
    await operator.browser.post(`/operator/accounts/${owner.account.account_id}`, { plan: 'contributor', disabled: 'yes' });
    expect((await member.browser.get('/overview')).status).toBe(303);
    await operator.browser.post(`/operator/accounts/${owner.account.account_id}`, { plan: 'contributor' });
    expect((await member.browser.get('/overview')).status).toBe(303);
    expect((await new WebClient(h.url).signIn(member.email, member.password)).status).toBe(303);
  });

  it('changes and creates plans with the notation of plans set, through the same catalog', async () => {
    const page = await operator.browser.get('/operator/plans');
    expect(page.text).toContain('<input id="lookups-tester" name="lookups" value="5/hour" required>');
    const saved = await operator.browser.post('/operator/plans', { name: 'tester', lookups: '10/hour', submissions: 'none', event_reads: '60/hour', max_clients: '2' });
    expect(saved.status).toBe(303);
    expect(await h.services.plans.find('tester')).toMatchObject({ maySubmit: false, lookups: { limit: 10, windowSeconds: 3600 }, maxClients: 2 });
    await operator.browser.get('/operator/plans');
    const created = await operator.browser.post('/operator/plans', { name: 'fleet', may_submit: 'yes', lookups: '1/second', submissions: '500/minute', event_reads: '60/minute', max_clients: 'unlimited' });
    expect(created.status).toBe(303);
    expect(await h.services.plans.find('fleet')).toEqual({ name: 'fleet', maySubmit: true, lookups: { limit: 1, windowSeconds: 1 }, submissions: { limit: 500, windowSeconds: 60 }, eventReads: { limit: 60, windowSeconds: 60 }, maxClients: null });
    const refused = await operator.browser.post('/operator/plans', { name: 'fleet', may_submit: 'yes', lookups: 'lots', submissions: 'none', event_reads: '60/minute', max_clients: '1' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('is not N/second, N/minute, N/hour or N/day');
    const audit = await h.services.audit.list({ limit: 20 });
    expect(audit.filter((a) => a.action === 'plan.saved').map((a) => a.actor)).toEqual([`user:${operator.user.user_id}`, `user:${operator.user.user_id}`]);
  });

  it('lists the audit trail, filtered by account', async () => {
    const audit = await operator.browser.get(`/operator/audit?account=${owner.account.account_id}`);
    expect(audit.status).toBe(200);
    expect(audit.text).toContain('client.created');
    expect(audit.text).not.toContain('Carrier');
    // Read by name: the operator by email (the id in its title), accounts by name leading to
    // their entries, the detail as its fields, so it wraps rather than widening the table.
    const all = (await operator.browser.get('/operator/audit')).text;
    expect(all).toContain(`<span title="user:${operator.user.user_id}">${operator.user.email}</span>`);
    const carrier = (await h.services.accounts.listAccounts()).find((a) => a.name === 'Carrier <x>')!;
    expect(all).toContain(`<a href="/operator/audit?account=${carrier.account_id}" title="${carrier.account_id}">Carrier &#60;x&#62;</a>`);
    expect(all).toMatch(/<td class="detail"><dl class="detail"><dt>/);
    expect(all).toContain('<div class="scroll" tabindex="0" role="region" aria-label="Audit entries">');
  });

  it('heads each plan with its name, one level under the page', async () => {
    const plans = (await operator.browser.get('/operator/plans')).text;
    expect(plans).toContain('<section class="plan" aria-labelledby="plan-contributor"><h2 id="plan-contributor">contributor</h2>');
    expect(plans).not.toContain('<h3>');
  });
});

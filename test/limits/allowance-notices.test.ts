import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/domain/accounts/plans.ts';
import { allowanceMail, AllowanceWatch, type AllowanceNotice } from '../../src/limits/allowance-watch.ts';
import { PlanLimiter } from '../../src/limits/plan-limiter.ts';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';

const PLAN: Plan = { name: 'ten', maySubmit: false, lookups: { limit: 10, windowSeconds: 60 }, submissions: null, maxClients: null, eventReads: { limit: 60, windowSeconds: 60 } };

describe('allowances running low and out (docs/api.md §9)', () => {
  function watched(tellEveryMs = 3600_000) {
    let now = 0;
    const counted: AllowanceNotice[] = [];
    const told: AllowanceNotice[] = [];
    const watch = new AllowanceWatch({ counted: (n) => counted.push(n), told: (n) => told.push(n) }, { tellEveryMs, now: () => now });
    // The limiter's own clock is Date.now; its window of 60 s is not crossed here.
    const limiter = new PlanLimiter(undefined, watch);
    const spend = (account = 'a', cost = 1) => limiter.spend('lookups', PLAN, account, cost);
    return { counted, told, spend, at: (ms: number) => (now = ms) };
  }

  it('notices a tenth or less left once, and a refusal once, per window; other accounts apart', () => {
    const { counted, told, spend } = watched();
    for (let i = 0; i < 8; i++) spend();
    expect(counted).toEqual([]);
    spend();
    expect(counted.map((n) => `${n.accountId} ${n.group} ${n.level}`)).toEqual(['a lookups low']);
    spend();
    spend();
    spend();
    expect(counted.map((n) => n.level)).toEqual(['low', 'spent']);
    expect(told.map((n) => n.level)).toEqual(['low', 'spent']);
    // A batch that jumps past the mark is noticed too.
    spend('b', 9);
    expect(counted.map((n) => `${n.accountId} ${n.level}`)).toEqual(['a low', 'a spent', 'b low']);
  });

  it('counts every window, and tells the owner at most once an interval', () => {
    const { counted, told, spend, at } = watched(3600_000);
    for (let i = 0; i < 11; i++) spend();
    // The watch's marks last the window the limiter answered (60 s); past it, a new window.
    at(61_000);
    spend();
    at(30 * 60_000);
    spend();
    expect(counted.map((n) => n.level)).toEqual(['low', 'spent', 'spent', 'spent']);
    expect(told.map((n) => n.level)).toEqual(['low', 'spent']);
    at(3600_000 + 1);
    spend();
    expect(told.map((n) => n.level)).toEqual(['low', 'spent', 'spent']);
  });

  it('mails the plan, the allowance and what a call guard does then', () => {
    const mail = allowanceMail({ group: 'lookups', level: 'spent', accountId: 'a', plan: PLAN, window: PLAN.lookups, resetSeconds: 42 });
    expect(mail.subject).toBe('Tollwatch: your lookups allowance ran out');
    expect(mail.text).toMatch(/^Your account's ten plan allows 10 lookups a minute, and it is spent: requests are answered 429 for 42 seconds more\./);
    expect(mail.text).toContain('call guard');
  });
});

describe('allowance notices of a running server', () => {
  let mail: MailCatcher;
  let h: Harness;
  let guard: TestAccount;
  beforeAll(async () => {
    mail = await startMailCatcher();
    h = await startHarness({ TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' }, { metrics: new PrometheusMetrics() });
    await h.services.plans.save(PLAN);
    guard = await h.account({ plan: PLAN.name, permissions: ['read:phone-numbers'] });
    await h.services.users.invite({ accountId: guard.account.account_id, email: 'owner@example.com', role: 'owner' });
    await h.services.users.invite({ accountId: guard.account.account_id, email: 'member@example.com', role: 'member' });
  });
  afterAll(async () => {
    await h?.close();
    await mail?.close();
  });

  it('counts the windows in tollwatch_allowance_notices_total and mails the account’s owners, not its members', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await guard.api('/api/phone-numbers/%2B15550100999')).status);
    expect(statuses).toEqual([...Array(10).fill(404), 429, 429]);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/^tollwatch_allowance_notices_total\{group="lookups",level="low"\} 1$/m);
    expect(metrics).toMatch(/^tollwatch_allowance_notices_total\{group="lookups",level="spent"\} 1$/m);
    const told = await eventually('two mails', () => mail.mails.filter((m) => /allowance/.test(m.raw)), (m) => m.length >= 2);
    expect(told.every((m) => m.to.join() === 'owner@example.com')).toBe(true);
    expect(told.map((m) => /^Subject: (.*)$/m.exec(m.raw)?.[1])).toEqual(['Tollwatch: your lookups allowance is running low', 'Tollwatch: your lookups allowance ran out']);
    // Each names the account it is about, first, for an owner who reads mail for several.
    for (const m of told) expect(m.raw).toContain(`About your Tollwatch account "${guard.account.name}".`);
  });
});

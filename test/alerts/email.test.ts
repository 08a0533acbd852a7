import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/logger.ts';
import { FAST_ALERTS } from '../support/alert-receiver.ts';
import { startMailCatcher, type Mail, type MailCatcher } from '../support/mail-catcher.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** Email integrations (docs/api.md §12) against a real local SMTP server. */
describe('email integrations (docs/api.md §12)', () => {
  let catcher: MailCatcher;
  let mails: Mail[];
  let h: Harness;
  let owner: TestAccount;

  async function nextMail(count: number): Promise<Mail> {
    await expect.poll(() => mails.length).toBeGreaterThanOrEqual(count);
    return mails[count - 1]!;
  }

  beforeAll(async () => {
    catcher = await startMailCatcher();
    mails = catcher.mails;
    h = await startHarness({ TOLLWATCH_SMTP_URL: catcher.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' }, { alerts: FAST_ALERTS });
    owner = await h.account({ permissions: ['write:events', 'read:phone-numbers', 'manage:integrations'] });
  });
  afterAll(async () => {
    await h?.close();
    await catcher?.close();
  });

  it('mails a one-time confirmation link, sends nothing before it is followed, then the alerts', async () => {
    const res = await owner.api('/api/integrations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'email', email: 'noc@example.com', alert_types: ['number.first_seen'], min_score: 0 }),
    });
    expect(res.status).toBe(201);
    const integration = (await res.json()) as { id: string; status: string; email: string; secret?: string };
    expect(integration).toMatchObject({ status: 'pending_confirmation', email: 'noc@example.com' });
    expect(integration.secret).toBeUndefined();

    const confirmation = await nextMail(1);
    expect(confirmation.to).toEqual(['noc@example.com']);
    const link = /http:\/\/tollwatch\.test\/integrations\/confirm\/([A-Za-z0-9_-]{43})/.exec(confirmation.raw.replace(/=\r?\n/g, ''));
    expect(link).not.toBeNull();
    const token = link![1]!;

    // Unconfirmed: an event with a new number alerts nobody, and a test delivery is refused.
    expect((await postEvent(owner, sampleEvent({ called_number: '+15551230001' }))).status).toBe(201);
    expect((await owner.api(`/api/integrations/${integration.id}/test`, { method: 'POST' })).status).toBe(422);
    await new Promise((r) => setTimeout(r, 400));
    expect(mails).toHaveLength(1);

    // Only the token's hash is stored.
    const stored = await h.services.database.db.selectFrom('integrations').selectAll().where('id', '=', integration.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(token);

    // Following the link shows a button (scanners fetch links); posting it confirms, once.
    const page = await fetch(`${h.url}/integrations/confirm/${token}`);
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('<form method="post">');
    // In the dashboard's layout and under its policy, which lets its stylesheet load.
    expect(text).toContain('<link rel="stylesheet" href="/static/dashboard.css">');
    expect(page.headers.get('content-security-policy')).toContain("style-src 'self'");
    expect(((await (await owner.api(`/api/integrations/${integration.id}`)).json()) as { status: string }).status).toBe('pending_confirmation');
    expect((await fetch(`${h.url}/integrations/confirm/${token}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' })).status).toBe(200);
    expect((await fetch(`${h.url}/integrations/confirm/${token}`, { method: 'POST' })).status).toBe(404);
    expect(((await (await owner.api(`/api/integrations/${integration.id}`)).json()) as { status: string }).status).toBe('active');

    expect((await postEvent(owner, sampleEvent({ called_number: '+15551230002' }))).status).toBe(201);
    const alert = await nextMail(2);
    expect(alert.to).toEqual(['noc@example.com']);
    expect(alert.raw).toContain('number.first_seen');
    expect(alert.raw).toContain('+15551230002');
    expect(alert.raw).toMatch(/From: alerts@tollwatch\.test/);

    const log = (await (await owner.api(`/api/integrations/${integration.id}/deliveries`)).json()) as { attempts: Array<Record<string, unknown>> };
    await expect.poll(async () => ((await (await owner.api(`/api/integrations/${integration.id}/deliveries`)).json()) as typeof log).attempts[0]?.outcome).toBe('delivered');
  });

  it('lets at most three addresses await confirmation at once', async () => {
    const create = (n: number) =>
      owner.api('/api/integrations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'email', email: `pending${n}@example.com` }) });
    for (const n of [1, 2, 3]) expect((await create(n)).status).toBe(201);
    const refused = await create(4);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: string }).error).toBe('limit_reached');
  });

  it('keeps confirmation tokens out of the log', () => {
    expect(redactSecrets('POST /integrations/confirm/AbC_-123?x=1 200')).toBe('POST /integrations/confirm/[redacted]?x=1 200');
  });

  it('answers an unknown or malformed link as not valid', async () => {
    expect((await fetch(`${h.url}/integrations/confirm/${'A'.repeat(43)}`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${h.url}/integrations/confirm/short`, { method: 'POST' })).status).toBe(404);
  });
});

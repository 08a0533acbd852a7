import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { cli } from '../support/server-process.ts';

const MANAGER = ['read:phone-numbers', 'read:ip-addresses', 'manage:integrations'];
const json = (body: unknown, method = 'POST'): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function expectProblem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { error: string; errors?: Array<{ field: string; message: string }> };
  expect(body.error).toBe(code);
  return body;
}

/** /api/integrations (docs/api.md §12) with private targets refused, as in production. */
describe('/api/integrations (docs/api.md §12)', () => {
  let h: Harness;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    h = await startHarness({}, { alerts: FAST_ALERTS });
    owner = await h.account({ permissions: MANAGER });
    other = await h.account({ permissions: MANAGER });
  });
  afterAll(() => h?.close());

  it('creates, lists, reads, changes and deletes a webhook; its secret is shown once', async () => {
    const created = await owner.api('/api/integrations', json({ kind: 'webhook', name: 'fraud desk', url: 'https://93.184.215.14/hook', alert_types: ['lookup.matched'] }));
    expect(created.status).toBe(201);
    expect(created.headers.get('api-version')).toBe('1');
    expect(created.headers.get('cache-control')).toBe('no-store');
    const integration = (await created.json()) as Record<string, unknown> & { id: string; secret: string };
    expect(integration).toMatchObject({ kind: 'webhook', name: 'fraud desk', url: 'https://93.184.215.14/hook', alert_types: ['lookup.matched'], status: 'active' });
    expect(integration.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const { secret: _secret, ...view } = integration;
    expect(await (await owner.api(`/api/integrations/${integration.id}`)).json()).toEqual(view);
    expect(await (await owner.api('/api/integrations')).json()).toEqual({ integrations: [view] });

    const changed = await owner.api(`/api/integrations/${integration.id}`, json({ alert_types: ['node.silent', 'number.first_seen'] }, 'PATCH'));
    expect(changed.status).toBe(200);
    expect(((await changed.json()) as { alert_types: string[] }).alert_types).toEqual(['number.first_seen', 'node.silent']);

    // The operator sees it too, never its secret; and every change is in the audit trail.
    const listed = cli(h.config.databaseUrl, 'integrations', 'list', '--account', owner.account.account_id);
    expect(listed.integrations).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain('whsec_');

    expect((await owner.api(`/api/integrations/${integration.id}`, { method: 'DELETE' })).status).toBe(204);
    await expectProblem(await owner.api(`/api/integrations/${integration.id}`), 404, 'not_found');
    const audited = await h.services.audit.list({ accountId: owner.account.account_id, limit: 10 });
    expect(audited.map((a) => a.action).filter((a) => a.startsWith('integration.'))).toEqual(['integration.deleted', 'integration.updated', 'integration.created']);
    expect(audited.find((a) => a.action === 'integration.created')).toMatchObject({ actor: `client:${owner.clientId}`, detail: { integration_id: integration.id } });
  });

  it('points an integration at a new URL only as it would take a new one (docs/api.md §12, "Changing")', async () => {
    const created = (await (await owner.api('/api/integrations', json({ kind: 'slack', url: 'https://93.184.215.14/services/T0/B0/secretpart' }))).json()) as { id: string; url: string };
    const patch = (body: unknown) => owner.api(`/api/integrations/${created.id}`, json(body, 'PATCH'));
    const stored = async () => (await h.services.database.db.selectFrom('integrations').select('target').where('id', '=', created.id).executeTakeFirstOrThrow()).target;
    // The URL as the API shows it (shortened) sent back is no change.
    expect(created.url).toBe('https://93.184.215.14/services/…');
    expect((await patch({ url: created.url, name: 'chat' })).status).toBe(200);
    expect(await stored()).toBe('https://93.184.215.14/services/T0/B0/secretpart');
    const refused = await expectProblem(await patch({ url: 'https://[::ffff:127.0.0.1]/services/T1', email: 'a@example.com' }), 422, 'validation_failed');
    expect(refused.errors!.map((e) => e.field).sort()).toEqual(['email', 'url']);
    expect(refused.errors!.find((e) => e.field === 'url')!.message).toMatch(/loopback/);
    expect(await stored()).toBe('https://93.184.215.14/services/T0/B0/secretpart');
    const moved = await patch({ url: 'https://93.184.215.15/services/T1/B1/other' });
    expect(moved.status).toBe(200);
    expect(((await moved.json()) as { url: string; status: string })).toMatchObject({ url: 'https://93.184.215.15/services/…', status: 'active' });
    expect(await stored()).toBe('https://93.184.215.15/services/T1/B1/other');
    const audited = (await h.services.audit.list({ accountId: owner.account.account_id, limit: 10 })).find((a) => a.action === 'integration.updated' && a.detail?.target_changed === true);
    expect(audited).toMatchObject({ actor: `client:${owner.clientId}`, detail: { integration_id: created.id, target_changed: true } });
    expect(JSON.stringify(audited)).not.toContain('other');
    expect((await owner.api(`/api/integrations/${created.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('names every bad field at once', async () => {
    const body = await expectProblem(await owner.api('/api/integrations', json({ kind: 'pager', alert_types: ['everything'], name: '' })), 422, 'validation_failed');
    expect(body.errors!.map((e) => e.field).sort()).toEqual(['alert_types', 'kind', 'name']);
    const missing = await expectProblem(await owner.api('/api/integrations', json({ kind: 'webhook' })), 422, 'validation_failed');
    expect(missing.errors).toEqual([{ field: 'url', message: expect.stringMatching(/URL/) }]);
    await expectProblem(await owner.api('/api/integrations', json({ kind: 'webhook', url: 'http://93.184.215.14/hook' })), 422, 'validation_failed');
    await expectProblem(await owner.api('/api/integrations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' }), 400, 'invalid_json');
  });

  it.each([
    ['loopback', 'https://127.0.0.1/hook'],
    ['a private network', 'https://10.1.2.3/hook'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['AWS IPv6 metadata', 'https://[fd00:ec2::254]/hook'],
    ['an IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook'],
    ['an IPv4-compatible loopback', 'https://[::127.0.0.1]:19443/'],
    ['IPv4-compatible cloud metadata', 'https://[::a9fe:a9fe]/'],
    ['CGNAT', 'https://100.64.0.1/hook'],
    ['a name resolving to loopback', 'https://localhost/hook'],
  ])('refuses a URL on %s (server-side request forgery)', async (_what, url) => {
    const body = await expectProblem(await owner.api('/api/integrations', json({ kind: 'webhook', url })), 422, 'validation_failed');
    expect(body.errors).toEqual([{ field: 'url', message: expect.stringMatching(/must not resolve to/) }]);
  });

  it('refuses a private target again at delivery, when one reached the store all the same', async () => {
    // As if its name had resolved to a public address when it was registered, and no longer does.
    const id = crypto.randomUUID();
    await h.services.database.db
      .insertInto('integrations')
      .values({ id, account_id: owner.account.account_id, kind: 'slack', name: 'rebound', target: 'https://127.0.0.1:9/hook', secret: null, alert_types: 'node.silent', created_at: new Date().toISOString(), confirmed_at: new Date().toISOString(), confirm_hash: null, confirm_expires_at: null })
      .execute();
    expect((await owner.api(`/api/integrations/${id}/test`, { method: 'POST' })).status).toBe(202);
    await expect
      .poll(async () => ((await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as { attempts: Array<{ error: string }> }).attempts[0]?.error, { timeout: 10_000 })
      .toMatch(/must not resolve to/);
    expect((await owner.api(`/api/integrations/${id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('refuses email integrations when no SMTP server is configured', async () => {
    await expectProblem(await owner.api('/api/integrations', json({ kind: 'email', email: 'ops@example.com' })), 409, 'email_not_configured');
  });

  it('401 without credentials, before looking at the request', async () => {
    const res = await fetch(`${h.url}/api/integrations`, json('not an object'));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });

  it('403 insufficient_scope for a client without manage:integrations, which new clients do not get unless named', async () => {
    const reader = await h.account();
    const res = await reader.api('/api/integrations');
    await expectProblem(res, 403, 'insufficient_scope');
    expect(res.headers.get('www-authenticate')).toContain('scope="manage:integrations"');
    expect(((await reader.api('/api/integrations', json({ kind: 'webhook' }))).status)).toBe(403);
  });

  it("shows and lets another account touch nothing of the owner's integrations", async () => {
    const created = (await (await owner.api('/api/integrations', json({ kind: 'slack', url: 'https://93.184.215.14/services/T1/B1/secret' }))).json()) as { id: string; url: string };
    expect(created.url).toBe('https://93.184.215.14/services/…');
    expect(await (await other.api('/api/integrations')).json()).toEqual({ integrations: [] });
    for (const [path, init] of [
      [`/api/integrations/${created.id}`, {}],
      [`/api/integrations/${created.id}`, json({ alert_types: ['node.silent'] }, 'PATCH')],
      [`/api/integrations/${created.id}`, { method: 'DELETE' }],
      [`/api/integrations/${created.id}/test`, { method: 'POST' }],
      [`/api/integrations/${created.id}/deliveries`, {}],
      ['/api/integrations/not-a-uuid', {}],
    ] as Array<[string, RequestInit]>) {
      await expectProblem(await other.api(path, init), 404, 'not_found');
    }
    expect((await owner.api(`/api/integrations/${created.id}`)).status).toBe(200);
  });

  it('checks the delivery log parameters', async () => {
    const [first] = ((await (await owner.api('/api/integrations')).json()) as { integrations: Array<{ id: string }> }).integrations;
    const body = await expectProblem(await owner.api(`/api/integrations/${first!.id}/deliveries?limit=0&sort=asc`), 422, 'validation_failed');
    expect(body.errors!.map((e) => e.field).sort()).toEqual(['limit', 'sort']);
    expect(await (await owner.api(`/api/integrations/${first!.id}/deliveries?limit=5`)).json()).toEqual({ attempts: [] });
  });
});

/** A subject's alerts beyond its throttle are suppressed, whatever their de-duplication window. */
describe('throttling per subject (docs/api.md §12)', () => {
  let h: Harness;
  let receiver: AlertReceiver;

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: { ...FAST_ALERTS, dedupWindowMs: 1, throttlePerSubject: 2, throttlePerAccountHour: 3 } });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('delivers at most the throttle of one subject within the throttle window', async () => {
    const owner = await h.account({ permissions: ['write:events', ...MANAGER] });
    expect((await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/throttle`, alert_types: ['lookup.matched'] }))).status).toBe(201);
    const { postEvent, sampleEvent } = await import('../support/harness.ts');
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550009999' }))).status).toBe(201);
    for (let i = 0; i < 4; i++) {
      expect((await owner.api('/api/phone-numbers/%2B15550009999')).status).toBe(200);
      await h.services.lookupAlerts.flush();
      await new Promise((r) => setTimeout(r, 150));
    }
    await receiver.waitFor(2, '/throttle');
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.filter((r) => r.path === '/throttle')).toHaveLength(2);
  });

  it('delivers at most the hourly throttle of one account, whatever the subjects', async () => {
    const owner = await h.account({ permissions: ['write:events', ...MANAGER] });
    expect((await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/account`, alert_types: ['number.first_seen'] }))).status).toBe(201);
    const { sampleEvent } = await import('../support/harness.ts');
    const events = Array.from({ length: 5 }, (_, i) => sampleEvent({ called_number: `+1555444000${i}` }));
    expect((await owner.api('/api/events/batch', json(events))).status).toBe(200);
    await receiver.waitFor(3, '/account');
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received.filter((r) => r.path === '/account')).toHaveLength(3);
  });
});

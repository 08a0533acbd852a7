import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/delivery/http-post.ts';
import { FAST_ALERTS } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';

/** A receiver whose answer the test sets as it goes: a status, and headers to send with it. */
async function switchableReceiver() {
  const state = { status: 500, headers: {} as Record<string, string>, requests: [] as Array<{ at: number; body: string }> };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests.push({ at: Date.now(), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(state.status, state.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

type Integration = { id: string; status: string; disabled_at: string | null; disabled_reason: string | null };
type Attempt = { at: string; attempt: number; outcome: string; status_code: number | null };

/**
 * A receiver that is gone, and one that asks for a pause (docs/api.md §12, "Delivery"): an
 * integration whose deliveries all failed for a day (here, a day of 1.5 s) is disabled, its
 * owners are mailed, and nothing is sent to it until it is enabled again. Before, a dead
 * receiver's alerts were retried and dropped for good, and nobody was told.
 */
describe('integrations whose receivers fail (docs/api.md §12)', () => {
  const DAY_MS = 1500;
  let h: Harness;
  let mail: MailCatcher;
  let receiver: Awaited<ReturnType<typeof switchableReceiver>>;
  let owner: TestAccount;
  const json = (body: unknown, method = 'POST'): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const get = async (id: string) => (await (await owner.api(`/api/integrations/${id}`)).json()) as Integration;
  const attempts = async (id: string) => ((await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as { attempts: Attempt[] }).attempts;

  beforeAll(async () => {
    mail = await startMailCatcher();
    receiver = await switchableReceiver();
    h = await startHarness(
      { TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on', TOLLWATCH_SMTP_URL: mail.url, TOLLWATCH_MAIL_FROM: 'alerts@tollwatch.test' },
      { alerts: { ...FAST_ALERTS, maxAttempts: 1000, retryForMs: DAY_MS } },
    );
    owner = await h.account({ permissions: ['manage:integrations'] });
    await h.services.users.invite({ accountId: owner.account.account_id, email: 'owner@example.com', role: 'owner' });
    await h.services.users.invite({ accountId: owner.account.account_id, email: 'member@example.com', role: 'member' });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
    await mail?.close();
  });

  it('disables an integration after a day in which every delivery failed, and tells its owners', async () => {
    receiver.state.status = 500;
    const created = await owner.api('/api/integrations', json({ kind: 'webhook', name: 'gone desk', url: `${receiver.url}/gone`, alert_types: ['node.silent'] }));
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as Integration;
    expect((await owner.api(`/api/integrations/${id}/test`, { method: 'POST' })).status).toBe(202);

    const disabled = await eventually('the integration to be disabled', () => get(id), (i) => i.status === 'disabled');
    expect(disabled.disabled_at).not.toBeNull();
    expect(disabled.disabled_reason).toMatch(/^no delivery succeeded for 2 seconds; the last attempt: answered 500$/);
    // Its one delivery was tried for the whole day, then given up.
    const log = await attempts(id);
    expect(log[0]).toMatchObject({ outcome: 'failed', status_code: 500 });
    expect(log.length).toBeGreaterThan(1);

    // The owner is mailed; a member is not.
    const told = await eventually('the owner to be mailed', async () => mail.mails.filter((m) => m.raw.includes('gone desk')), (m) => m.length > 0);
    expect(told.flatMap((m) => m.to)).toEqual(['owner@example.com']);
    expect(told[0]!.raw.replace(/=\r?\n/g, '')).toContain('no delivery succeeded');
    const audit = await h.services.database.db.selectFrom('audit_log').select(['actor', 'detail']).where('action', '=', 'integration.disabled').execute();
    expect(audit.map((a) => a.actor)).toEqual(['service']);

    // Nothing is sent to it meanwhile: a test is refused.
    expect((await owner.api(`/api/integrations/${id}/test`, { method: 'POST' })).status).toBe(422);
  });

  it('sends again once its owner enables it', async () => {
    const [first] = (await (await owner.api('/api/integrations')).json() as { integrations: Integration[] }).integrations;
    receiver.state.status = 204;
    const enabled = await owner.api(`/api/integrations/${first!.id}`, json({ enabled: true }, 'PATCH'));
    expect(enabled.status).toBe(200);
    expect(await enabled.json()).toMatchObject({ status: 'active', disabled_at: null, disabled_reason: null });
    expect((await owner.api(`/api/integrations/${first!.id}/test`, { method: 'POST' })).status).toBe(202);
    await eventually('the test alert to be delivered', () => attempts(first!.id), (log) => log[0]?.outcome === 'delivered');
    // Its owner may disable it too, with a reason that says so.
    const off = await owner.api(`/api/integrations/${first!.id}`, json({ enabled: false }, 'PATCH'));
    expect(await off.json()).toMatchObject({ status: 'disabled', disabled_reason: 'disabled by its owner' });
    expect((await owner.api(`/api/integrations/${first!.id}`, json({ enabled: 'yes' }, 'PATCH'))).status).toBe(422);
  });

  it('reads Retry-After as seconds or as an HTTP date, and ignores anything else', () => {
    const now = Date.parse('2026-11-25T10:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Wed, 25 Nov 2026 10:01:30 GMT', now)).toBe(90_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

/** A receiver that asks for a pause gets it: the next attempt waits for its `Retry-After`. */
describe("a receiver's Retry-After (docs/api.md §12)", () => {
  let h: Harness;
  let busy: Awaited<ReturnType<typeof switchableReceiver>>;
  let owner: TestAccount;
  const attempts = async (id: string) => ((await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as { attempts: Attempt[] }).attempts;

  beforeAll(async () => {
    busy = await switchableReceiver();
    // A schedule of 100 ms to 3 s, retried for the default day: only the receiver's word makes a 2 s pause.
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: { ...FAST_ALERTS, maxAttempts: 1000, retryMaxMs: 3000 } });
    owner = await h.account({ permissions: ['manage:integrations'] });
  });
  afterAll(async () => {
    await h?.close();
    await busy?.close();
  });

  it("honours a receiver's Retry-After", async () => {
    busy.state.status = 503;
    busy.state.headers = { 'retry-after': '2' };
    const created = await owner.api('/api/integrations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'webhook', url: `${busy.url}/busy`, alert_types: ['node.silent'] }) });
    const { id } = (await created.json()) as Integration;
    const sent = busy.state.requests.length;
    expect((await owner.api(`/api/integrations/${id}/test`, { method: 'POST' })).status).toBe(202);
    await eventually('a first attempt', async () => busy.state.requests.length, (n) => n > sent);
    busy.state.status = 200;
    busy.state.headers = {};
    const log = await eventually('the retry to be delivered', () => attempts(id), (l) => l[0]?.outcome === 'delivered');
    // The schedule alone would have tried again within 100 ms; the receiver asked for 2 s.
    expect(Date.parse(log[0]!.at) - Date.parse(log[1]!.at)).toBeGreaterThanOrEqual(2000);
  });
});

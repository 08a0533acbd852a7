import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';

/** Alerts delivered to webhooks and Slack (docs/api.md §12), on a real store, to a real local receiver. */
describe('alert deliveries (docs/api.md §12)', () => {
  let h: Harness;
  let receiver: AlertReceiver;
  let owner: TestAccount;
  let other: TestAccount;

  const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  // min_score 0: the sample events are of a fixed day and their scores decay with age
  // (docs/scoring.md); these tests are about delivery, test/alerts/thresholds.test.ts about scores.
  async function webhook(who: TestAccount, path: string, alertTypes: string[]) {
    const res = await who.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}${path}`, alert_types: alertTypes, min_score: 0 }));
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; secret: string };
  }

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    h = await startHarness(
      { TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on', TOLLWATCH_NODE_SILENT_AFTER: '1', TOLLWATCH_NODE_SILENT_CHECK: '1' },
      { alerts: { ...FAST_ALERTS, throttlePerSubject: 2 } },
    );
    const permissions = ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses', 'manage:integrations'];
    owner = await h.account({ permissions });
    other = await h.account({ permissions });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('signs lookup.matched webhooks as Standard Webhooks says, with only what the lookup answered', async () => {
    const { secret } = await webhook(owner, '/matched', ['lookup.matched']);
    expect((await postEvent(owner, sampleEvent({ called_number: '+441234567890' }))).status).toBe(201);
    const lookup = await owner.api('/api/phone-numbers/%2B441234567890');
    expect(lookup.status).toBe(200);
    const answer = (await lookup.json()) as Record<string, unknown>;

    const [delivery] = await receiver.waitFor(1, '/matched');
    const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(payload.type).toBe('lookup.matched');
    expect(Date.parse(payload.timestamp)).not.toBeNaN();
    const { message: _m, found: _f, ...answered } = answer;
    expect(payload.data).toEqual({ lookup: 'phone_number', ...answered });
    expect(delivery!.headers['webhook-id']).toMatch(/^msg_/);
    // A tampered body fails the receiver's check.
    expect(() => new Webhook(secret).verify(`${delivery!.body} `, delivery!.headers as Record<string, string>)).toThrow();
  });

  it('sends one alert per subject and type within the window, and throttles a subject', async () => {
    const before = (await receiver.waitFor(1, '/matched')).length;
    for (let i = 0; i < 3; i++) expect((await owner.api('/api/phone-numbers/%2B441234567890')).status).toBe(200);
    await h.services.lookupAlerts.flush();
    await new Promise((r) => setTimeout(r, 500));
    expect((await receiver.waitFor(before, '/matched')).length).toBe(before);
  });

  it('alerts address lookups and bulk lookups alike', async () => {
    const before = (await receiver.waitFor(1, '/matched')).length;
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550007777' }))).status).toBe(201);
    expect((await owner.api('/api/ip-addresses/203.0.113.7')).status).toBe(200);
    const bulk = await owner.api('/api/phone-numbers/lookup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone_numbers: ['+1 555 000 7777', '+19995550000'] }),
    });
    expect(bulk.status).toBe(200);
    const all = await receiver.waitFor(before + 2, '/matched');
    const payloads = all.slice(before).map((r) => JSON.parse(r.body) as { data: Record<string, unknown> });
    expect(payloads.map((p) => p.data.lookup).sort()).toEqual(['ip_address', 'phone_number']);
    expect(payloads.find((p) => p.data.lookup === 'ip_address')!.data).toMatchObject({ ip_address: '203.0.113.7', seen_count: expect.any(Number) });
    // The number never seen answered found:false: no alert for it.
    expect(JSON.stringify(payloads)).not.toContain('19995550000');
  });

  it('alerts the first lookup after a lookup.matched integration is made, though earlier lookups found none', async () => {
    const late = await h.account({ permissions: ['write:events', 'read:phone-numbers', 'manage:integrations'] });
    expect((await postEvent(late, sampleEvent({ called_number: '+15550005555' }))).status).toBe(201);
    // Looked up with no integration: the account is then known to have none…
    expect((await late.api('/api/phone-numbers/%2B15550005555')).status).toBe(200);
    await h.services.lookupAlerts.flush();
    // …until it makes one, which this instance learns at once.
    expect((await late.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/late`, alert_types: ['lookup.matched'], min_score: 0 }))).status).toBe(201);
    expect((await late.api('/api/phone-numbers/%2B15550005555')).status).toBe(200);
    const [delivery] = await receiver.waitFor(1, '/late');
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'lookup.matched', data: { phone_number: '+15550005555' } });
  });

  it("stops delivering a disabled account's alerts", async () => {
    const quiet = await h.account({ permissions: ['write:events', 'manage:integrations'] });
    expect((await quiet.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/disabled`, alert_types: ['number.first_seen'], min_score: 0 }))).status).toBe(201);
    expect((await postEvent(quiet, sampleEvent({ called_number: '+15550006666' }))).status).toBe(201);
    await receiver.waitFor(1, '/disabled');
    await h.services.accounts.setDisabled(quiet.account.account_id, true);
    // Alerts raised while it was enabled but not yet fanned out are dropped too.
    await h.services.database.db
      .insertInto('alerts')
      .values({ id: 'msg_disabled', account_id: quiet.account.account_id, type: 'number.first_seen', subject: 'number:x', dedup_key: 'x', data: '{}', created_at: new Date().toISOString(), integration_id: null, state: 'new', claimed_until: null })
      .execute();
    await expect.poll(async () => (await h.services.database.db.selectFrom('alerts').select('state').where('id', '=', 'msg_disabled').executeTakeFirst())?.state).toBe('fanned_out');
    expect(receiver.received.filter((r) => r.path === '/disabled')).toHaveLength(1);
  });

  it('retries after a failure, with every attempt in the delivery log', async () => {
    const { id } = await webhook(owner, '/retry', ['number.first_seen']);
    receiver.answer('/retry', 500);
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550001111' }))).status).toBe(201);
    const deliveries = await receiver.waitFor(2, '/retry');
    expect(deliveries[0]!.headers['webhook-id']).toBe(deliveries[1]!.headers['webhook-id']);
    const body = JSON.parse(deliveries[1]!.body) as { type: string; data: Record<string, unknown> };
    expect(body).toMatchObject({ type: 'number.first_seen', data: { phone_number: '+15550001111' } });
    type Log = { attempts: Array<Record<string, unknown>> };
    const log = await eventually('both attempts in the delivery log', async () => (await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as Log, (seen) => seen.attempts.length >= 2);
    expect(log.attempts.map((a) => [a.attempt, a.status_code, a.outcome])).toEqual([
      [2, 200, 'delivered'],
      [1, 500, 'retrying'],
    ]);
    expect(log.attempts[1]!.error).toBe('answered 500');
    expect(typeof log.attempts[0]!.duration_ms).toBe('number');
    // Seen again: not first any more.
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550001111' }))).status).toBe(201);
    await new Promise((r) => setTimeout(r, 400));
    expect((await receiver.waitFor(2, '/retry')).length).toBe(2);
  });

  it('gives up after the last attempt', async () => {
    const { id } = await webhook(owner, '/down', ['number.first_seen']);
    receiver.answer('/down', 503, 503, 503);
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550002222' }))).status).toBe(201);
    await receiver.waitFor(3, '/down');
    const outcomes = await eventually(
      'the delivery marked failed',
      async () => ((await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as { attempts: Array<{ outcome: string }> }).attempts.map((a) => a.outcome),
      (seen) => seen[0] === 'failed',
    );
    expect(outcomes).toEqual(['failed', 'retrying', 'retrying']);
  });

  it('posts Slack messages with text and blocks', async () => {
    const res = await owner.api('/api/integrations', json({ kind: 'slack', url: `${receiver.url}/slack/T000/B000/XXXX`, alert_types: ['number.first_seen'], min_score: 0 }));
    expect(res.status).toBe(201);
    expect(((await res.json()) as { url: string }).url).toBe(`${receiver.url}/slack/…`);
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550003333' }))).status).toBe(201);
    const [message] = await receiver.waitFor(1, '/slack');
    const body = JSON.parse(message!.body) as { text: string; blocks: unknown[] };
    expect(body.text).toContain('+15550003333');
    expect(body.blocks.length).toBeGreaterThan(0);
    expect(message!.headers['webhook-signature']).toBeUndefined();
  });

  it('alerts node.silent once per silence', async () => {
    await webhook(owner, '/silent', ['node.silent']);
    // An event two days old, inside the week the check looks back over (the samples' fixed
    // date falls out of it as the calendar moves): its node has been silent for over a minute.
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString().replace('T', ' ').replace('Z', '000000');
    expect((await postEvent(owner, sampleEvent({ event_timestamp: twoDaysAgo }))).status).toBe(201);
    const [first] = await receiver.waitFor(1, '/silent');
    expect(JSON.parse(first!.body)).toMatchObject({ type: 'node.silent', data: { node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92' } });
    await new Promise((r) => setTimeout(r, 1500));
    expect((await receiver.waitFor(1, '/silent')).length).toBe(1);
  });

  it("never alerts one account of another's lookups or events", async () => {
    await webhook(owner, '/isolation', ['lookup.matched', 'number.first_seen']);
    expect((await postEvent(other, sampleEvent({ called_number: '+15550004444' }))).status).toBe(201);
    expect((await other.api('/api/phone-numbers/%2B15550004444')).status).toBe(200);
    expect((await other.api('/api/phone-numbers/%2B441234567890')).status).toBe(404);
    await h.services.lookupAlerts.flush();
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received.filter((r) => r.path === '/isolation')).toEqual([]);
    // B cannot read A's delivery log either.
    const [integration] = ((await (await owner.api('/api/integrations')).json()) as { integrations: Array<{ id: string }> }).integrations;
    expect((await other.api(`/api/integrations/${integration!.id}/deliveries`)).status).toBe(404);
  });

  it('sends a test delivery on request', async () => {
    const { id, secret } = await webhook(owner, '/test', ['node.silent']);
    const res = await owner.api(`/api/integrations/${id}/test`, { method: 'POST' });
    expect(res.status).toBe(202);
    const { alert_id } = (await res.json()) as { alert_id: string };
    const [delivery] = await receiver.waitFor(1, '/test');
    expect(delivery!.headers['webhook-id']).toBe(alert_id);
    expect(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).toMatchObject({ type: 'integration.test' });
  });
});

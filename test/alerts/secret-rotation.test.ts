import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * Rotating a webhook's signing secret (docs/api.md §12, "Verifying a webhook"): the new secret
 * is answered once, and for a day every delivery carries the old secret's signature beside the
 * new one's, so a receiver verifies with either, as Standard Webhooks allows. Checked with the
 * official library. Before, the only way to change a secret was a new webhook.
 */
describe('webhook secret rotation (docs/api.md §12)', () => {
  let h: Harness;
  let receiver: AlertReceiver;
  let owner: TestAccount;
  const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const verifies = (secret: string, delivery: { body: string; headers: Record<string, unknown> }) => {
    try {
      new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    owner = await h.account({ permissions: ['manage:integrations'] });
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('signs with the new secret and the old one for a day, then with the new one alone', async () => {
    const created = (await (await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/rotating`, alert_types: ['node.silent'] }))).json()) as { id: string; secret: string };
    const rotation = await owner.api(`/api/integrations/${created.id}/secret`, { method: 'POST' });
    expect(rotation.status).toBe(200);
    const { secret, previous_secret_expires_at } = (await rotation.json()) as { secret: string; previous_secret_expires_at: string };
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(created.secret);
    const overlap = Date.parse(previous_secret_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);

    expect((await owner.api(`/api/integrations/${created.id}/test`, { method: 'POST' })).status).toBe(202);
    const [during] = await receiver.waitFor(1, '/rotating');
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(secret, during!)).toBe(true);
    expect(verifies(created.secret, during!)).toBe(true);
    expect(verifies('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', during!)).toBe(false);

    // The overlap ends (moved into the past here rather than waited for): the old secret no longer verifies.
    await h.services.database.db.updateTable('integrations').set({ previous_secret_until: new Date(Date.now() - 1000).toISOString() }).where('id', '=', created.id).execute();
    expect((await owner.api(`/api/integrations/${created.id}/test`, { method: 'POST' })).status).toBe(202);
    const [, after] = await receiver.waitFor(2, '/rotating');
    expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(secret, after!)).toBe(true);
    expect(verifies(created.secret, after!)).toBe(false);

    // Sealed at rest like the secret: neither is stored in plain text.
    const row = await h.services.database.db.selectFrom('integrations').select(['secret', 'previous_secret']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(`${row.secret} ${row.previous_secret}`).not.toContain(secret.slice('whsec_'.length));
    expect(`${row.secret} ${row.previous_secret}`).not.toContain(created.secret.slice('whsec_'.length));
  });

  it('refuses a kind with no secret (422), and another account’s integration (404)', async () => {
    const slack = (await (await owner.api('/api/integrations', json({ kind: 'slack', url: `${receiver.url}/services/T0/B0/x`, alert_types: ['node.silent'] }))).json()) as { id: string };
    const refused = await owner.api(`/api/integrations/${slack.id}/secret`, { method: 'POST' });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: 'validation_failed' });
    const other = await h.account({ permissions: ['manage:integrations'] });
    const hook = (await (await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/mine`, alert_types: ['node.silent'] }))).json()) as { id: string };
    expect((await other.api(`/api/integrations/${hook.id}/secret`, { method: 'POST' })).status).toBe(404);
    const audit = await h.services.database.db.selectFrom('audit_log').select('action').where('action', '=', 'integration.secret_rotated').execute();
    expect(audit).toHaveLength(1);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertPayload } from '../../src/domain/alerts/alerts.ts';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * No alert for what the account allowlisted (docs/api.md §12, §16): neither `number.first_seen`
 * for its events nor `lookup.matched` for its lookups; the values beside them still alert.
 */
describe('alerts and the allowlist (docs/api.md §16)', () => {
  let h: Harness;
  let receiver: AlertReceiver;
  let owner: TestAccount;
  const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const subjects = async () =>
    (await h.services.database.db.selectFrom('alerts').select(['type', 'subject']).where('account_id', '=', owner.account.account_id).execute()).map((a) => `${a.type} ${a.subject}`).sort();

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    owner = await h.account({ permissions: ['write:events', 'read:phone-numbers', 'read:ip-addresses', 'manage:integrations', 'manage:allowlist'] });
    const made = await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/hook`, alert_types: ['lookup.matched', 'number.first_seen'], min_score: 0 }));
    expect(made.status).toBe(201);
    for (const [kind, value] of [['phone_number', '0015550101010'], ['number_prefix', '+1555020'], ['ip_address', '203.0.113.50']]) {
      expect((await owner.api('/api/allowlist', json({ kind, value }))).status).toBe(201);
    }
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('raises no first sighting of an allowlisted number or one under an allowlisted prefix', async () => {
    for (const number of ['+15550101010', '+15550202020']) {
      expect((await postEvent(owner, sampleEvent({ called_number: number, source_ip: '203.0.113.50' }))).status).toBe(201);
    }
    await h.settled();
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550909090', source_ip: '203.0.113.50' }))).status).toBe(201);
    const [delivery] = await receiver.waitFor(1, '/hook');
    expect((JSON.parse(delivery!.body) as AlertPayload).data).toMatchObject({ phone_number: '+15550909090' });
    expect(await subjects()).toEqual(['number.first_seen number:+15550909090']);
  });

  it('raises no lookup.matched for an allowlisted answer, which still shows its evidence', async () => {
    for (const path of ['/api/phone-numbers/%2B15550101010', '/api/phone-numbers/%2B15550202020', '/api/ip-addresses/203.0.113.50']) {
      expect(await (await owner.api(path)).json(), path).toMatchObject({ found: true, allowlisted: true, seen_count: expect.any(Number) });
    }
    expect((await owner.api('/api/phone-numbers/%2B15550909090')).status).toBe(200);
    await receiver.waitFor(2, '/hook');
    expect(await subjects()).toEqual(['lookup.matched number:+15550909090', 'number.first_seen number:+15550909090']);
  });
});

import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertPayload } from '../../src/domain/alerts/alerts.ts';
import { headline } from '../../src/delivery/alert-text.ts';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * Alerts speak in scores (docs/api.md §12): `lookup.matched` and
 * `number.first_seen` go only to integrations whose `min_score` they reach, and say the score
 * and its strongest reason instead of a verdict. Before, a score-0 number raised an alert that
 * called it "targeted by toll fraud".
 */
describe('alert thresholds (docs/api.md §12)', () => {
  let h: Harness;
  let receiver: AlertReceiver;
  let owner: TestAccount;
  const ids: Record<string, { id: string; secret: string }> = {};
  const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const deliveries = async (id: string) => ((await (await owner.api(`/api/integrations/${id}/deliveries`)).json()) as { attempts: Array<{ alert_type: string }> }).attempts;

  beforeAll(async () => {
    receiver = await startAlertReceiver();
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    owner = await h.account({ permissions: ['write:events', 'read:phone-numbers', 'manage:integrations'] });
    for (const [name, minScore] of [['any', 0], ['strict', 100]] as const) {
      const res = await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/${name}`, alert_types: ['lookup.matched', 'number.first_seen'], min_score: minScore }));
      expect(res.status).toBe(201);
      expect(await res.clone().json()).toMatchObject({ min_score: minScore });
      ids[name] = (await res.json()) as { id: string; secret: string };
    }
  });
  afterAll(async () => {
    await h?.close();
    await receiver?.close();
  });

  it('sends a first sighting with its score and reasons, only where min_score is reached', async () => {
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550101010' }))).status).toBe(201);
    const [delivery] = await receiver.waitFor(1, '/any');
    const payload = new Webhook(ids.any!.secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as AlertPayload;
    expect(payload.type).toBe('number.first_seen');
    // The score the account's own lookup answers for the number.
    const answer = (await (await owner.api('/api/phone-numbers/%2B15550101010')).json()) as { score: number; reasons: string[] };
    expect(payload.data).toMatchObject({ phone_number: '+15550101010', score: answer.score, reasons: answer.reasons });
    expect(answer.score).toBeLessThan(100);
    // One fan-out wrote every delivery of the alert: none went to the strict integration.
    expect((await deliveries(ids.strict!.id)).filter((d) => d.alert_type === 'number.first_seen')).toEqual([]);
  });

  it('sends a lookup.matched only where the answer’s score reaches min_score', async () => {
    expect((await owner.api('/api/phone-numbers/%2B15550101010')).status).toBe(200);
    const got = await receiver.waitFor(2, '/any');
    expect(got.map((r) => (JSON.parse(r.body) as AlertPayload).type)).toContain('lookup.matched');
    expect(await deliveries(ids.strict!.id)).toEqual([]);
  });

  it('judges at or above: an integration whose min_score is the score exactly gets the alert', async () => {
    const score = ((await (await owner.api('/api/phone-numbers/%2B15550101010')).json()) as { score: number }).score;
    const exact = await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/exact`, alert_types: ['number.first_seen'], min_score: score }));
    const above = await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/above`, alert_types: ['number.first_seen'], min_score: score + 1 }));
    const [exactId, aboveId] = [((await exact.json()) as { id: string }).id, ((await above.json()) as { id: string }).id];
    // The same evidence for a number new to the account: the same score.
    expect((await postEvent(owner, sampleEvent({ called_number: '+15550202020' }))).status).toBe(201);
    await receiver.waitFor(1, '/exact');
    expect(await deliveries(aboveId)).toEqual([]);
    expect(exactId).toBeTruthy();
  });

  it('refuses a min_score outside 0 to 100 or not an integer', async () => {
    for (const min_score of [-1, 101, 2.5, '20', null]) {
      const res = await owner.api('/api/integrations', json({ kind: 'webhook', url: `${receiver.url}/bad`, min_score }));
      expect(res.status, JSON.stringify(min_score)).toBe(422);
      expect(await res.json()).toMatchObject({ error: 'validation_failed', errors: [{ field: 'min_score' }] });
    }
  });

  it('headlines state the score and its strongest reason, not a verdict', () => {
    const payload = (type: AlertPayload['type'], data: Record<string, unknown>): AlertPayload => ({ type, timestamp: '2026-11-25T10:00:00Z', data });
    expect(headline(payload('lookup.matched', { lookup: 'phone_number', phone_number: '+46812118532', score: 41, reasons: ['called from 2 distinct source addresses', 'last seen today'] }))).toBe(
      'Tollwatch: a looked-up number was seen in honeypot probes (+46812118532, score 41: called from 2 distinct source addresses)',
    );
    expect(headline(payload('lookup.matched', { lookup: 'ip_address', ip_address: '203.0.113.7', score: 28, reasons: ['dialled 3 distinct numbers'] }))).toBe(
      'Tollwatch: a looked-up address was seen probing honeypots (203.0.113.7, score 28: dialled 3 distinct numbers)',
    );
    expect(headline(payload('number.first_seen', { phone_number: '+15550101010', first_seen: '2026-11-21T10:00:00Z', score: 24, reasons: ['called from 1 distinct source address'] }))).toBe(
      'Tollwatch: your nodes saw a number for the first time (+15550101010, score 24: called from 1 distinct source address)',
    );
    // An alert written before scores were added reads without one.
    expect(headline(payload('number.first_seen', { phone_number: '+15550101010' }))).toBe('Tollwatch: your nodes saw a number for the first time (+15550101010)');
    for (const type of ['lookup.matched', 'number.first_seen'] as const) expect(headline(payload(type, { phone_number: '+1', score: 0 }))).not.toMatch(/toll fraud|targeted/);
  });
});
